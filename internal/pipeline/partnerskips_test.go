package pipeline

import (
	"testing"

	"github.com/memorder/wafl/plans"
)

// TestPartnerSkips sums the partner-side skips of the runs of this detect
// call only: the plan's last n runs.
func TestPartnerSkips(t *testing.T) {
	p := &plans.Plan{Runs: []plans.Run{{N: 1, SkippedPartner: 5}, {N: 2, SkippedPartner: 1}, {N: 3}, {N: 4, SkippedPartner: 2}}}
	for n, want := range map[int]int{0: 0, 1: 2, 2: 2, 3: 3, 4: 8, 9: 8} {
		if got := partnerSkips(p, n); got != want {
			t.Errorf("partnerSkips(last %d) = %d, want %d", n, got, want)
		}
	}
}
