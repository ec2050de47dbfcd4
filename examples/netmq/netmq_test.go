package netmq

import (
	"testing"
	"time"
)

// The reader handles a message right away; the peer resets the connection
// 8 ms later.
func TestAbruptDisconnect(t *testing.T) {
	p := &Poller{handled: make(map[string]int)}
	c := Open(p)
	c.Deliver(Packet{Kind: "MESSAGE", Body: "hello"})
	time.Sleep(8 * time.Millisecond)
	c.Terminate(Packet{Kind: "DISCONNECT"})
	if p.Handled("MESSAGE") != 1 || p.Handled("DISCONNECT") != 1 {
		t.Fatalf("handled MESSAGE=%d DISCONNECT=%d, want 1 and 1", p.Handled("MESSAGE"), p.Handled("DISCONNECT"))
	}
}
