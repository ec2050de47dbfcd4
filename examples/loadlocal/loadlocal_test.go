package loadlocal

import (
	"testing"
	"time"
)

// The test dials once and closes the server 8 ms after Run; the serve
// goroutine reads the listener field microseconds after Run.
func TestCloseSoonAfterRun(t *testing.T) {
	s := Run()
	s.Listener().Dial("a")
	time.Sleep(8 * time.Millisecond)
	s.Close()
	if n := s.Served(); n > 1 {
		t.Fatalf("served %d connections, want at most 1", n)
	}
}
