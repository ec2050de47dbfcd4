package forcemtu

import (
	"testing"
	"time"
)

// The link monitor forces the MTU right after the device comes up; the device
// is closed 8 ms later.
func TestCloseWithLinkMonitor(t *testing.T) {
	d := New(1500)
	m := StartMonitor(d, 1280)
	time.Sleep(8 * time.Millisecond)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	m.Wait()
	var events []Event
	for e := range d.Events() {
		events = append(events, e)
	}
	if len(events) == 0 || events[0] != EventUp {
		t.Fatalf("events = %v, want EventUp first", events)
	}
	if d.MTU() != 1280 {
		t.Fatalf("MTU = %d, want 1280", d.MTU())
	}
}
