package winiopipe

import (
	"testing"
	"time"
)

// No client connects; the listener is closed 8 ms after Listen, while the
// connect goroutine waits for a client.
func TestCloseListenerWithoutClient(t *testing.T) {
	l := Listen(make(chan struct{}))
	time.Sleep(8 * time.Millisecond)
	if err := l.Close(); err != ErrPipeListenerClosed {
		t.Fatalf("Close returned %v, want %v", err, ErrPipeListenerClosed)
	}
}
