package quicdouble

import (
	"testing"
	"time"
)

// The peer's CONNECTION_CLOSE is processed as soon as the run loop starts;
// the application closes the session 8 ms later.
func TestCloseAfterPeerClose(t *testing.T) {
	s := Dial("STREAM", "CONNECTION_CLOSE")
	time.Sleep(8 * time.Millisecond)
	if err := s.CloseWithError("application done"); err == nil {
		t.Log("application closed the session first")
	}
	s.Wait()
}
