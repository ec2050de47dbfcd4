package netstack

import (
	"testing"
	"time"
)

// The stack queues its router solicitation as soon as the link is up; the
// device is closed 8 ms later without anyone reading it.
func TestCloseDiscardsUnreadPackets(t *testing.T) {
	tun := New()
	s := Up(tun)
	time.Sleep(8 * time.Millisecond)
	discarded := tun.Close()
	s.Wait()
	if discarded+int(tun.Dropped()) != 1 {
		t.Fatalf("discarded %d + dropped %d, want 1 packet in total", discarded, tun.Dropped())
	}
	if _, ok := tun.Read(); ok {
		t.Fatal("Read succeeded on a closed device")
	}
}
