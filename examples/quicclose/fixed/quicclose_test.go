package quicclose

import (
	"testing"
	"time"
)

// The peer's CONNECTION_CLOSE is processed as soon as the run loop starts;
// the application closes the connection 8 ms later.
func TestCloseAfterPeerClose(t *testing.T) {
	c := Dial("STREAM", "CONNECTION_CLOSE")
	time.Sleep(8 * time.Millisecond)
	err := c.CloseWithError("application done")
	c.Wait()
	if c.ClosedByPeer() != (err != nil) {
		t.Fatalf("ClosedByPeer = %v but CloseWithError returned %v", c.ClosedByPeer(), err)
	}
}
