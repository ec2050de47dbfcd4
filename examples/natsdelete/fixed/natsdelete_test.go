package natsdelete

import (
	"sync"
	"testing"
	"time"
)

// The server shuts down while an API request deletes one of the stream's
// consumers a few milliseconds later.
func TestDeleteDuringShutdown(t *testing.T) {
	s, loops := NewStream("C1")
	o := s.Lookup("C1")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.Shutdown()
	}()
	time.Sleep(5 * time.Millisecond)
	if err := o.Delete(); err != nil && err != ErrClosed {
		t.Fatal(err)
	}
	wg.Wait()
	loops.Wait()
}
