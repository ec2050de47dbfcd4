package appinsights

import (
	"testing"
	"time"
)

// Events arrive every 8 ms; the listener is allocated microseconds after the
// source is enabled.
func TestModuleCollectsEvents(t *testing.T) {
	src := NewEventSource(3, 8*time.Millisecond)
	m := NewModule(src)
	src.WaitDelivered(3)
	if got := m.Count("GCStart"); got != 3 {
		t.Fatalf("collected %d events, want 3", got)
	}
	m.Close()
}
