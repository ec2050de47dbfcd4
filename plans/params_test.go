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

func TestRunStretchScalesWithLoad(t *testing.T) {
	for _, c := range []struct {
		load    float64
		noScale bool
		want    float64
	}{
		{0, false, 1},
		{1, false, 1},
		{2, false, 1.5},
		{3, false, 2},
		{40, false, MaxStretch},
		{3, true, 1},
		{math.NaN(), false, 1},
	} {
		if got := RunStretch(c.load, c.noScale); got != c.want {
			t.Errorf("RunStretch(%v, %v) = %v, want %v", c.load, c.noScale, got, c.want)
		}
	}
	p := DefaultParams()
	for _, bad := range []float64{-1, MaxStretch + 1, math.NaN()} {
		p.Stretch = bad
		if p.Validate() == nil {
			t.Errorf("stretch %v validated", bad)
		}
	}
}

func TestRunDelay(t *testing.T) {
	const ms = int64(1e6)
	p := DefaultParams()
	p.MaxDelayNs = 100 * ms
	for _, c := range []struct {
		stretch float64
		slack   int64
		learned int64
		want    int64
	}{
		{0, 0, 10 * ms, 10 * ms},          // plans written before slack and stretch
		{1, 2 * ms, 10 * ms, 12 * ms},     // a quiet machine: slack only
		{2, 4 * ms, 10 * ms, 24 * ms},     // load factor 3
		{2.5, 8 * ms, 60 * ms, 100 * ms},  // clamped to the bound
		{2.5, 8 * ms, 150 * ms, 150 * ms}, // a length already past the bound stays
		{2, 4 * ms, 0, 0},                 // no delay
	} {
		p.Stretch, p.SlackNs = c.stretch, c.slack
		if got := p.RunDelay(c.learned); got != c.want {
			t.Errorf("stretch %v slack %d: RunDelay(%d) = %d, want %d", c.stretch, c.slack, c.learned, got, c.want)
		}
	}
}
