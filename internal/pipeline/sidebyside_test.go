package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
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
			// Neither happens-before inference nor decay ends the
			// plan's candidates early: three runs.
			o.Runs, o.Procs, o.Ablate = 3, 3, abi.AblateHB|abi.AblateDecay
			o.SeedSet, o.Seed = true, 100
			sum, err := Detect(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Bugs) != 0 || len(sum.Problems) != 0 || sum.Runs != 3 {
				t.Fatalf("detect: bugs %v, problems %v, %d runs; want none, none, 3", sum.Bugs, sum.Problems, sum.Runs)
			}
			if sum.Beside != c.beside {
				t.Errorf("%d test processes ran beside another; want %d", sum.Beside, c.beside)
			}
			p, err := plans.Load(filepath.Join(o.WorkDir, "plans", "example.com", "long", "TestLong.json"))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Runs) != 3 {
				t.Fatalf("plan has %d runs; want 3", len(p.Runs))
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

// runBatch: one run for a short test, a last run, a
// refusing gate; otherwise one more for each slot the gate admits.
func TestRunBatch(t *testing.T) {
	long := func(recorded int) *plans.Plan {
		p := &plans.Plan{}
		p.Provenance.DurationNs = int64(2 * sideBySide)
		p.Provenance.DetectRecorded = recorded
		return p
	}
	short := long(plans.MaxDetectRecord)
	short.Provenance.DurationNs = int64(sideBySide / 2)
	idle := func(n float64) func() float64 { return func() float64 { return n } }
	o := &DetectOptions{Runs: 3}
	for _, c := range []struct {
		name string
		plan *plans.Plan
		k    int
		g    *gate
		want int
	}{
		{"all runs of a long test", long(plans.MaxDetectRecord), 0, &gate{limit: 6, idle: idle(2)}, 3},
		{"one CPU idle", long(plans.MaxDetectRecord), 0, &gate{limit: 6, idle: idle(1.5)}, 2},
		{"with the recording run", long(0), 0, &gate{limit: 6, idle: idle(2)}, 3},
		{"after the first run", long(0), 1, &gate{limit: 6, idle: idle(2)}, 2},
		{"last run", long(plans.MaxDetectRecord), 2, &gate{limit: 6, idle: idle(2)}, 1},
		{"short test", short, 0, &gate{limit: 6, idle: idle(2)}, 1},
		{"no CPU idle", long(plans.MaxDetectRecord), 0, &gate{limit: 6, idle: idle(0.5)}, 1},
		{"gate full", long(plans.MaxDetectRecord), 0, &gate{limit: 1, running: 1, idle: idle(2)}, 1},
		{"no gate", long(plans.MaxDetectRecord), 0, nil, 1},
	} {
		s := &session{gate: c.g}
		held := 0
		if c.g != nil {
			held = c.g.running
		}
		if got := runBatch(s, o, c.plan, c.k); got != c.want {
			t.Errorf("%s: runBatch = %d; want %d", c.name, got, c.want)
		}
		if c.g != nil && c.g.running != held+c.want-1 {
			t.Errorf("%s: %d slots held; want %d", c.name, c.g.running, held+c.want-1)
		}
	}
}
