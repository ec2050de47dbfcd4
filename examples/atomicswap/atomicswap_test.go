package atomicswap

import (
	"testing"
	"time"
)

// The server hangs up 8 ms after Start; the test sends its leave message
// right away.
func TestLeaveBeforeHangup(t *testing.T) {
	c := Start(8 * time.Millisecond)
	if err := c.SendLeave(); err != nil {
		t.Fatal(err)
	}
	c.Wait()
}
