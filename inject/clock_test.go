package inject

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestRealClockInSynctestBubble: inside a testing/synctest bubble the
// engine's clock still moves while a goroutine sleeps a delay (a real
// sleep, which the bubble does not see as durably blocked). With the
// bubble's fake clock the wait for a late partner never ended: its loop
// waits for real time to pass.
func TestRealClockInSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := realClock()
		t0 := c.now()
		c.sleep(int64(2 * time.Millisecond))
		if d := time.Duration(c.now() - t0); d < time.Millisecond {
			t.Fatalf("the clock moved %v over a 2ms sleep inside the bubble", d)
		}
	})
}
