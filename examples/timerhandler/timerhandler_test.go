package timerhandler

import (
	"sync/atomic"
	"testing"
	"time"
)

// The retry starts 1 ms after Start and calls the handler at once; the
// test closes the consumer 8 ms after the retry started.
func TestRetryThenClose(t *testing.T) {
	var handled atomic.Int32
	c := NewConsumer()
	c.Start(func(string) { handled.Add(1) }, "m", time.Millisecond)
	<-c.Started()
	time.Sleep(8 * time.Millisecond)
	c.Close()
	<-c.Retried()
	if n := handled.Load(); n > 1 {
		t.Fatalf("handled %d messages, want at most 1", n)
	}
}
