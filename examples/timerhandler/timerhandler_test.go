package timerhandler

import (
	"sync/atomic"
	"testing"
	"time"
)

// The retry fires 1 ms after Start; the test closes the consumer 9 ms
// after Start.
func TestRetryThenClose(t *testing.T) {
	var handled atomic.Int32
	c := NewConsumer()
	c.Start(func(string) { handled.Add(1) }, "m", time.Millisecond)
	time.Sleep(9 * time.Millisecond)
	c.Close()
	<-c.Retried()
	if n := handled.Load(); n != 1 {
		t.Fatalf("handled %d messages, want 1", n)
	}
}
