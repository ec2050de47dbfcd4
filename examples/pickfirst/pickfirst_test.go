package pickfirst

import (
	"testing"
	"time"
)

// The idle timer fires 8 ms after Dial starts the watcher; the subchannel is
// created within microseconds, so ExitIdle normally finds it.
func TestDialExitIdle(t *testing.T) {
	cc, err := Dial("passthrough:///10.0.0.1:443,10.0.0.2:443", 8*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	cc.Wait()
	sc := cc.SubConn()
	if sc.Addr() != "10.0.0.1:443" {
		t.Fatalf("subconn address = %q, want the first address", sc.Addr())
	}
	if got := sc.Attempts(); got < 1 || got > 2 {
		t.Fatalf("connect attempts = %d, want 1 or 2 (initial, plus ExitIdle)", got)
	}
}

func TestDialNoAddresses(t *testing.T) {
	if _, err := Dial("passthrough:///", time.Hour); err == nil {
		t.Fatal("Dial with no addresses succeeded")
	}
}
