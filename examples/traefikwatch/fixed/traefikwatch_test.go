package traefikwatch

import (
	"testing"
	"time"
)

// The informers send their initial LIST right after WatchAll; the provider is
// stopped after the configuration had 8 ms to settle.
func TestProviderStop(t *testing.T) {
	c := NewClient(map[string][]string{"secrets": {"default/basic-auth"}})
	p := &Provider{}
	p.Start(c)
	time.Sleep(8 * time.Millisecond) // let the configuration settle
	n := p.Reloads()
	p.Stop()
	if n > 1 {
		t.Fatalf("reloads = %d, want at most 1", n)
	}
}
