package plans

import (
	"math"
	"testing"
)

func TestRunSlackScalesWithLoad(t *testing.T) {
	for _, c := range []struct {
		load    float64
		noScale bool
		want    int64
	}{
		{0, false, DefaultSlackNs},
		{1, false, DefaultSlackNs},
		{2.5, false, DefaultSlackNs * 5 / 2},
		{6, false, 6 * DefaultSlackNs}, // above MaxLoadFactor: the slack has its own cap
		{40, false, int64(MaxSlackFactor) * DefaultSlackNs},
		{3, true, DefaultSlackNs},
		{math.NaN(), false, DefaultSlackNs},
	} {
		if got := RunSlack(c.load, c.noScale); got != c.want {
			t.Errorf("RunSlack(%v, %v) = %d, want %d", c.load, c.noScale, got, c.want)
		}
	}
	p := DefaultParams()
	p.SlackNs = -1
	if p.Validate() == nil {
		t.Error("a negative slack_ns validated")
	}
}
