package newtping

import (
	"testing"
	"time"
)

// The monitor pings 1 ms after connecting (61 ms in one start of five); the
// test closes the client at 30 ms and does not wait for a late monitor.
func TestPingThenClose(t *testing.T) {
	c := Connect(time.Millisecond, 60*time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	c.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Millisecond):
	}
}
