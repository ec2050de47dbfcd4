package bifrostsend

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// A producer sends requests while the queue shuts down 5 ms later; the
// producer recovers a "send on closed channel" panic and fails the test, as
// the upstream reproducer does.
func TestShutdownWhileProducing(t *testing.T) {
	q := NewQueue(16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("producer panicked: %v", r)
			}
		}()
		for i := 0; i < 3; i++ {
			if err := q.TryRequest(&Request{ID: i}); err != nil {
				return
			}
		}
	}()
	time.Sleep(5 * time.Millisecond)
	q.Shutdown()
	wg.Wait()
	if n := q.served.Load(); n > 3 {
		t.Fatal(fmt.Sprintf("served %d requests", n))
	}
}
