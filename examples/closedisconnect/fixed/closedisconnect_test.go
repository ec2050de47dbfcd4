package closedisconnect

import "testing"

// The regression test of the fix, with 20 clients instead of 10000: each
// is closed in one goroutine while the transport reports its connection
// lost in another.
func TestConcurrentCloseDisconnect(t *testing.T) {
	for i := 0; i < 20; i++ {
		c := Connect()
		c.NewSubscription("news")
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			c.Close()
		}()
		c.HandleDisconnect()
		<-closed
		if len(c.Events()) == 0 {
			t.Fatal("no unsubscribed event")
		}
	}
}
