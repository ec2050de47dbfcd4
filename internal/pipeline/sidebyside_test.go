package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

// longSrc has one test with a candidate pair that no delay can expose
// (the dispose waits for the use over a channel), run for sleep after it.
func longSrc(sleep time.Duration) string {
	return fmt.Sprintf(`package long

import (
	"testing"
	"time"
)

%s
func TestLong(t *testing.T) {
	pair()
	time.Sleep(%d)
}
`, pairSrc, int64(sleep))
}

// detectLong runs detect with three runs on the prepared module of
// longSrc, neither happens-before inference nor decay ending the plan's
// candidates early, and returns the summary and TestLong's plan after
// checking that the three runs passed.
func detectLong(t *testing.T, o *DetectOptions) (*Summary, *plans.Plan) {
	t.Helper()
	o.Runs, o.Procs, o.Ablate = 3, 3, abi.AblateHB|abi.AblateDecay
	o.SeedSet, o.Seed = true, 100
	sum, err := Detect(context.Background(), *o)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Bugs) != 0 || len(sum.Problems) != 0 || sum.Runs != 3 {
		t.Fatalf("detect: bugs %v, problems %v, %d runs; want none, none, 3", sum.Bugs, sum.Problems, sum.Runs)
	}
	p, err := plans.Load(filepath.Join(o.WorkDir, "plans", "example.com", "long", "TestLong.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 3 {
		t.Fatalf("plan has %d runs; want 3", len(p.Runs))
	}
	return sum, p
}

// TestDetectRunsLongTestSideBySide: with CPUs idle, the detection runs of
// a test whose preparation run took sideBySide or longer start side by
// side, its first (recording) run among them, and are folded into its
// plan in order; a short test's runs follow one another.
func TestDetectRunsLongTestSideBySide(t *testing.T) {
	defer func(f func() float64, d time.Duration) { gateIdle, gateSettle = f, d }(gateIdle, gateSettle)
	gateIdle, gateSettle = func() float64 { return 2 }, time.Millisecond
	for _, c := range []struct {
		name   string
		sleep  time.Duration
		beside int
	}{
		{"long", 2 * sideBySide, 3}, // all three
		{"short", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, _ := preparedModule(t, "long", longSrc(c.sleep), 1)
			sum, p := detectLong(t, &o)
			if sum.Beside != c.beside {
				t.Errorf("%d test processes ran beside another; want %d", sum.Beside, c.beside)
			}
			for i, r := range p.Runs {
				beside := 0
				if c.beside > 0 {
					beside = c.beside
				}
				if r.N != i+1 || r.Seed != o.Seed+uint64(i) || r.Beside != beside {
					t.Errorf("plan's run %d: number %d, seed %d, beside %d; want %d, %d, %d", i, r.N, r.Seed, r.Beside, i+1, o.Seed+uint64(i), beside)
				}
			}
		})
	}
}

// sideBySideRuns: all the runs left of a long test, one of a short test or
// in basic mode.
func TestSideBySideRuns(t *testing.T) {
	long := &plans.Plan{}
	long.Provenance.DurationNs = int64(2 * sideBySide)
	short := &plans.Plan{}
	short.Provenance.DurationNs = int64(sideBySide / 2)
	o := &DetectOptions{Runs: 3}
	basic := &DetectOptions{Runs: 3}
	basic.Basic = true
	for _, c := range []struct {
		name string
		o    *DetectOptions
		plan *plans.Plan
		k    int
		want int
	}{
		{"all runs of a long test", o, long, 0, 3},
		{"after the first run", o, long, 1, 2},
		{"last run", o, long, 2, 1},
		{"short test", o, short, 0, 1},
		{"basic mode", basic, long, 0, 1},
	} {
		if got := sideBySideRuns(c.o, c.plan, c.k); got != c.want {
			t.Errorf("%s: sideBySideRuns = %d; want %d", c.name, got, c.want)
		}
	}
}

// TestDetectLongTestRunsJoinLate: when the gate refuses a process beside
// a long test's first run as it starts (no CPU idle then), the test's
// other runs join it as soon as the gate admits them, while it runs,
// instead of waiting for it to end.
func TestDetectLongTestRunsJoinLate(t *testing.T) {
	defer func(f func() float64, d time.Duration) { gateIdle, gateSettle = f, d }(gateIdle, gateSettle)
	var asked atomic.Int64
	gateIdle = func() float64 {
		if asked.Add(1) == 1 {
			return 0 // busy when the first run starts
		}
		return 2
	}
	gateSettle = time.Millisecond
	o, _ := preparedModule(t, "long", longSrc(2*sideBySide), 1)
	asked.Store(0)
	_, p := detectLong(t, &o)
	if asked.Load() < 2 {
		t.Fatalf("the gate was asked %d times; want a refusal, then an admission", asked.Load())
	}
	for i, r := range p.Runs {
		if r.Beside != 3 {
			t.Errorf("plan's run %d: beside %d; want 3 (runs 2 and 3 joined run 1)", i+1, r.Beside)
		}
	}
}
