package closeboth

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The application closes its channel while the remote closes its end: the
// remote's ChannelClosed frame arrives 8 ms before or 8 ms after the local
// Close, as the network decides (the test draws it).
func TestCloseWhileRemoteCloses(t *testing.T) {
	c := Dial()
	ch := c.Channel()
	remoteFirst := rand.IntN(2) == 0
	remote := make(chan struct{})
	go func() {
		defer close(remote)
		if !remoteFirst {
			time.Sleep(16 * time.Millisecond)
		}
		c.Deliver(Frame{Type: FrameChannelClosed})
	}()
	time.Sleep(8 * time.Millisecond)
	if err := ch.Close(); err != nil {
		t.Logf("remote closed first: %v", err)
	}
	<-remote
	c.Shutdown()
}
