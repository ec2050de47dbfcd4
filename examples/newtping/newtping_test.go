package newtping

import (
	"testing"
	"time"
)

// The monitor pings 1 ms after connecting (16 ms in one start of five); the
// test closes the client at 10 ms and does not wait for a late monitor.
func TestPingThenClose(t *testing.T) {
	c := Connect(time.Millisecond, 15*time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	c.Close()
	select {
	case <-c.Done():
	case <-time.After(3 * time.Millisecond):
	}
}
