package analyze

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/plans"
)

const ms = int64(time.Millisecond)

// row is one trace row for hand-built traces.
type row struct {
	t     int64 // ns
	g     uint64
	clock uint32
	site  uint32
	obj   uint64
	op    abi.Op
}

func initAt(t int64, g uint64, clock, site uint32, obj uint64) row {
	return row{t, g, clock, site, obj, abi.OpInit}
}
func useAt(t int64, g uint64, clock, site uint32, obj uint64) row {
	return row{t, g, clock, site, obj, abi.OpUse}
}
func disposeAt(t int64, g uint64, clock, site uint32, obj uint64) row {
	return row{t, g, clock, site, obj, abi.OpDispose}
}

// forkAt: parent started child at the parent's counter clock.
func forkAt(t int64, parent uint64, clock uint32, child uint64) row {
	return row{t, parent, clock, 0, child, abi.OpFork}
}

// source builds a SliceSource, batchSize rows per batch.
func source(rows []row, batchSize int) *SliceSource {
	s := &SliceSource{M: Meta{Package: "example.com/m", Test: "TestX"}}
	for len(rows) > 0 {
		n := min(batchSize, len(rows))
		var c trace.Batch
		for _, r := range rows[:n] {
			c.Append(r.t, r.g, r.clock, r.site, r.obj, uint8(r.op))
		}
		s.Batches = append(s.Batches, c)
		rows = rows[n:]
	}
	return s
}

func analyzeRows(t *testing.T, rows []row, opts Options) (*plans.Plan, *Stats) {
	t.Helper()
	return analyzeTuned(t, rows, opts, &tuning{})
}

// analyzeTuned is analyzeRows with the knobs of tests.
func analyzeTuned(t *testing.T, rows []row, opts Options, tune *tuning) (*plans.Plan, *Stats) {
	t.Helper()
	p, st, err := run(context.Background(), source(rows, 3).Opener(), opts, tune)
	if err != nil {
		t.Fatal(err)
	}
	return p, st
}

// pairsOf lists the plan's pairs as "kind first→second".
func pairsOf(p *plans.Plan) []string {
	var out []string
	for _, l := range p.Locations {
		for _, pr := range l.Pairs {
			out = append(out, fmt.Sprintf("%s %d→%d", pr.Kind, pr.First, pr.Second))
		}
	}
	return out
}

func wantPairs(t *testing.T, p *plans.Plan, want ...string) {
	t.Helper()
	got := pairsOf(p)
	if !slices.Equal(got, want) {
		t.Fatalf("pairs:\n got %q\nwant %q", got, want)
	}
}

func TestBugInitUseInUnrelatedGoroutines(t *testing.T) {
	p, st := analyzeRows(t, []row{
		initAt(0, 1, 1, 10, 0xA),
		useAt(5*ms, 2, 1, 20, 0xA),
	}, Options{})
	wantPairs(t, p, "use-before-init 10→20")
	l := p.Location(10)
	if l.MaxGapNs != 5*ms || l.DelayNs != 6_250_000 || l.Prob != 1 {
		t.Fatalf("location: %+v", l)
	}
	if pr := l.Pairs[0]; pr.Object != 0xA || pr.Count != 1 || pr.MinGapNs != 5*ms {
		t.Fatalf("pair: %+v", pr)
	}
	if st.Instances != 1 || st.Candidates != 1 || st.Locations != 1 || st.Objects != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestNoBugInitBeforeForkIsOrdered(t *testing.T) {
	// The parent initializes at counter 1 and forks the user at counter 1
	// (its counter then advances to 2): init → fork → use.
	p, st := analyzeRows(t, []row{
		initAt(0, 1, 1, 10, 0xA),
		forkAt(1*ms, 1, 1, 2),
		useAt(2*ms, 2, 1, 20, 0xA),
	}, Options{})
	wantPairs(t, p)
	if st.PrunedFork != 1 || !p.Empty() {
		t.Fatalf("stats: %+v", st)
	}
}

func TestNoBugInitBeforeForkOfGrandchildIsOrdered(t *testing.T) {
	p, st := analyzeRows(t, []row{
		initAt(0, 1, 1, 10, 0xA),
		forkAt(1*ms, 1, 1, 2),
		forkAt(1*ms, 2, 1, 3),
		useAt(2*ms, 3, 1, 20, 0xA),
	}, Options{})
	wantPairs(t, p)
	if st.PrunedFork != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestBugInitAfterForkIsConcurrent(t *testing.T) {
	// The parent forks at counter 1 and initializes at counter 2: the
	// child's use is concurrent with the init.
	p, st := analyzeRows(t, []row{
		forkAt(0, 1, 1, 2),
		initAt(1*ms, 1, 2, 10, 0xA),
		useAt(2*ms, 2, 1, 20, 0xA),
	}, Options{})
	wantPairs(t, p, "use-before-init 10→20")
	if st.PrunedFork != 0 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestNoBugChildUseBeforeParentDisposeAfterJoinlessFork(t *testing.T) {
	// Use in the child, dispose in the parent after the fork: concurrent
	// (forks never order a child before its parent), so this is a bug
	// candidate; the same with the dispose before the fork is ordered.
	p, _ := analyzeRows(t, []row{
		forkAt(0, 1, 1, 2),
		useAt(1*ms, 2, 1, 20, 0xA),
		disposeAt(2*ms, 1, 2, 30, 0xA),
	}, Options{})
	wantPairs(t, p, "use-after-dispose 20→30")
	p, st := analyzeRows(t, []row{
		useAt(0, 1, 1, 20, 0xA),
		forkAt(1*ms, 1, 1, 2),
		disposeAt(2*ms, 2, 1, 30, 0xA),
	}, Options{})
	wantPairs(t, p)
	if st.PrunedFork != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestNoBugOutsideNearMissWindow(t *testing.T) {
	p, st := analyzeRows(t, []row{
		initAt(0, 1, 1, 10, 0xA),
		useAt(100*ms, 2, 1, 20, 0xA), // gap == δ: outside
		useAt(250*ms, 3, 1, 20, 0xA),
		useAt(300*ms, 3, 1, 21, 0xB),
		disposeAt(400*ms, 1, 1, 30, 0xB),
	}, Options{})
	wantPairs(t, p)
	if st.PrunedWindow != 3 {
		t.Fatalf("PrunedWindow = %d, want 3: %+v", st.PrunedWindow, st)
	}
	// A wider δ admits them.
	p, _ = analyzeRows(t, []row{
		initAt(0, 1, 1, 10, 0xA),
		useAt(100*ms, 2, 1, 20, 0xA),
	}, Options{NearMiss: 200 * time.Millisecond})
	wantPairs(t, p, "use-before-init 10→20")
}

func TestNoBugSameGoroutine(t *testing.T) {
	p, st := analyzeRows(t, []row{
		initAt(0, 1, 1, 10, 0xA),
		useAt(1*ms, 1, 1, 20, 0xA),
		disposeAt(2*ms, 1, 1, 30, 0xA),
	}, Options{})
	wantPairs(t, p)
	if st.PrunedSameG != 2 {
		t.Fatalf("PrunedSameG = %d, want 2", st.PrunedSameG)
	}
}

func TestBugUseAfterDisposeKeepsGapRange(t *testing.T) {
	p, _ := analyzeRows(t, []row{
		initAt(0, 1, 1, 10, 0xA),
		useAt(200*ms, 2, 1, 20, 0xA),
		useAt(204*ms, 2, 1, 20, 0xA),
		useAt(207*ms, 2, 1, 20, 0xA),
		disposeAt(210*ms, 1, 1, 30, 0xA),
	}, Options{})
	wantPairs(t, p, "use-after-dispose 20→30")
	pr := p.Location(20).Pairs[0]
	if pr.Count != 3 || pr.MinGapNs != 3*ms || pr.MaxGapNs != 10*ms {
		t.Fatalf("pair %+v", pr)
	}
	if d := p.Location(20).DelayNs; d != 12_500_000 {
		t.Fatalf("delay %d, want 1.25 × 10 ms", d)
	}
}

func TestNoBugInitSupersededOrDisposed(t *testing.T) {
	// Only the most recent lifecycle event before a use counts: a later
	// init by the user itself, or a dispose in between, hides the earlier
	// init of another goroutine.
	p, st := analyzeRows(t, []row{
		initAt(0, 1, 1, 10, 0xA),
		initAt(1*ms, 2, 1, 11, 0xA),
		useAt(2*ms, 2, 1, 20, 0xA),

		initAt(0, 1, 1, 12, 0xB),
		disposeAt(1*ms, 3, 1, 30, 0xB),
		useAt(2*ms, 2, 1, 21, 0xB),
	}, Options{})
	wantPairs(t, p)
	if st.PrunedSameG != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBugUsePairsOnlyWithFirstDisposeAfterIt(t *testing.T) {
	p, _ := analyzeRows(t, []row{
		useAt(0, 2, 1, 20, 0xA),
		disposeAt(1*ms, 1, 1, 30, 0xA),
		initAt(2*ms, 1, 1, 10, 0xA),
		disposeAt(3*ms, 1, 1, 31, 0xA),
	}, Options{})
	wantPairs(t, p, "use-after-dispose 20→30")
}

func TestDelayIsAlphaTimesLargestGapClamped(t *testing.T) {
	rows := []row{
		// site 10: gaps 2 ms and 8 ms -> 1.25 × 8 = 10 ms
		initAt(0, 1, 1, 10, 0xA), useAt(2*ms, 2, 1, 20, 0xA), useAt(8*ms, 3, 1, 21, 0xA),
		// site 11: gap 0.1 ms -> 0.125 ms, clamped up to 1 ms
		initAt(0, 1, 1, 11, 0xB), useAt(ms/10, 2, 1, 20, 0xB),
		// site 12: gap 95 ms -> 118.75 ms, clamped down to 100 ms
		initAt(0, 1, 1, 12, 0xC), useAt(95*ms, 2, 1, 20, 0xC),
	}
	p, _ := analyzeRows(t, rows, Options{})
	for site, want := range map[uint32]int64{10: 10 * ms, 11: 1 * ms, 12: 100 * ms} {
		if got := p.Location(site).DelayNs; got != want {
			t.Errorf("site %d: delay %d, want %d", site, got, want)
		}
	}
	p, _ = analyzeRows(t, rows, Options{Alpha: 2, MinDelay: 5 * time.Millisecond, MaxDelay: 150 * time.Millisecond})
	for site, want := range map[uint32]int64{10: 16 * ms, 11: 5 * ms, 12: 150 * ms} {
		if got := p.Location(site).DelayNs; got != want {
			t.Errorf("α=2, [5ms,150ms]: site %d: delay %d, want %d", site, got, want)
		}
	}
	if _, _, err := Run(context.Background(), source(rows, 8).Opener(), Options{Alpha: 0.5}); err == nil || !strings.Contains(err.Error(), "alpha") {
		t.Errorf("α = 0.5 accepted: %v", err)
	}
}

// Figure 4.2a (ApplicationInsights): thread 1 constructs the listener
// (init lstnr, line 2) and later disposes it; thread 2's event handler uses
// lstnr (line 8). Init→use and use→dispose are both candidates, and each
// delay location is in the other's interference set: a delay before the
// use in thread 2 cancels a delay before the init in thread 1, and vice
// versa.
func TestBugFigure42aInitAndUseInterfere(t *testing.T) {
	const (
		lineInit    = 2
		lineUse     = 8
		lineDispose = 5
		lstnr       = 0xA1
	)
	p, _ := analyzeRows(t, []row{
		initAt(10*ms, 1, 1, lineInit, lstnr),
		useAt(12*ms, 2, 1, lineUse, lstnr),
		disposeAt(14*ms, 1, 1, lineDispose, lstnr),
	}, Options{})
	wantPairs(t, p, "use-before-init 2→8", "use-after-dispose 8→5")
	if got := p.Location(lineInit).Interference; !slices.Equal(got, []uint32{lineUse}) {
		t.Errorf("interference(init line 2) = %v, want [8]", got)
	}
	if got := p.Location(lineUse).Interference; !slices.Equal(got, []uint32{lineInit}) {
		t.Errorf("interference(use line 8) = %v, want [2]", got)
	}
}

// Figure 4.2b (NetMQ): m_poller is used at line 11 by thread 2 and, under a
// different call context, by thread 1 right before thread 1 disposes it at
// line 8. The delay at line 11 in thread 2 is cancelled by the delay at the
// other dynamic instance of line 11 in thread 1: line 11 interferes with
// itself. Thread 1's own use→dispose is no candidate (same goroutine).
func TestBugFigure42bDynamicInstancesInterfere(t *testing.T) {
	const (
		line11  = 11
		line8   = 8
		mPoller = 0xB2
		other   = 0xB3
	)
	p, st := analyzeRows(t, []row{
		initAt(0, 1, 1, 3, mPoller),
		useAt(200*ms, 2, 1, line11, mPoller),
		useAt(201*ms, 1, 1, line11, mPoller),
		disposeAt(202*ms, 1, 1, line8, mPoller),
		// unrelated traffic on another object outside the window
		useAt(50*ms, 1, 1, 40, other),
	}, Options{})
	wantPairs(t, p, "use-after-dispose 11→8")
	if got := p.Location(line11).Interference; !slices.Equal(got, []uint32{line11}) {
		t.Errorf("interference(line 11) = %v, want [11]", got)
	}
	if st.PrunedSameG != 1 {
		t.Errorf("PrunedSameG = %d, want 1 (thread 1's own use→dispose)", st.PrunedSameG)
	}
}

func TestInterferenceWindowBounds(t *testing.T) {
	// ℓ1 = init@10 in g1 at 200 ms, ℓ2 = use@20 in g2 at 210 ms. Candidate
	// locations in g2: site 30 (a use→dispose ℓ1 elsewhere) at 99 ms
	// (before τ1 − δ: out), at 100 ms (in), in g3 (other goroutine: out),
	// and site 31 at 211 ms (after ℓ2: out).
	rows := []row{
		initAt(200*ms, 1, 1, 10, 0xA),
		useAt(210*ms, 2, 1, 20, 0xA),
		// site 30 and 31 become candidates via object B and C
		useAt(300*ms, 4, 1, 30, 0xB), disposeAt(301*ms, 5, 1, 50, 0xB),
		useAt(300*ms, 4, 1, 31, 0xC), disposeAt(301*ms, 5, 1, 51, 0xC),
		useAt(211*ms, 2, 1, 31, 0xD),
		useAt(150*ms, 3, 1, 30, 0xD),
	}
	p, _ := analyzeRows(t, append(slices.Clone(rows), useAt(99*ms, 2, 1, 30, 0xD)), Options{})
	if got := p.Location(10).Interference; len(got) != 0 {
		t.Errorf("interference(10) = %v, want []", got)
	}
	p, _ = analyzeRows(t, append(slices.Clone(rows), useAt(100*ms, 2, 1, 30, 0xD)), Options{})
	if got := p.Location(10).Interference; !slices.Equal(got, []uint32{30}) {
		t.Errorf("interference(10) = %v, want [30]", got)
	}
}

func TestTruncatedTraceAnalyzesPrefix(t *testing.T) {
	s := source([]row{initAt(0, 1, 1, 10, 0xA), useAt(5*ms, 2, 1, 20, 0xA)}, 1)
	s.Fail = fmt.Errorf("trace t.arrows: %w", ErrTruncated)
	p, st, err := Run(context.Background(), s.Opener(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantPairs(t, p, "use-before-init 10→20")
	if !st.Truncated || !p.Provenance.Truncated || len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "truncated") {
		t.Fatalf("stats %+v", st)
	}
	s.Fail = errors.New("disk on fire")
	if _, _, err := Run(context.Background(), s.Opener(), Options{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("hard error: %v", err)
	}
}

func TestMalformedRowsAreSkipped(t *testing.T) {
	s := source([]row{
		initAt(0, 1, 1, 10, 0xA),
		{5 * ms, 2, 1, 20, 0xA, abi.NumOps}, // unknown op
		useAt(5*ms, 2, 1, 0, 0xA),           // site 0
		useAt(6*ms, 2, 1, 20, 0xA),
	}, 10)
	s.Batches[0].Op = append(s.Batches[0].Op, uint8(abi.OpUse)) // ragged
	p, st, err := Run(context.Background(), s.Opener(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantPairs(t, p, "use-before-init 10→20")
	if st.Malformed != 3 || len(st.Warnings) != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestForkCycleIsAClearError(t *testing.T) {
	_, _, err := Run(context.Background(), source([]row{forkAt(0, 1, 1, 2), forkAt(0, 2, 1, 1)}, 4).Opener(), Options{})
	if err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Run(ctx, source([]row{initAt(0, 1, 1, 10, 0xA)}, 1).Opener(), Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestSpilledAnalysisMatchesInMemory(t *testing.T) {
	rows := randomTrace(1, 20000, 3000)
	mem, mst := analyzeRows(t, rows, Options{})
	tmp := filepath.Join(t.TempDir(), "not", "yet")
	sp, sst := analyzeRows(t, rows, Options{MemoryBudget: 1, TempDir: tmp})
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Fatalf("spill directory not created or not cleaned up: %v %v", ents, err)
	}
	re, rst := analyzeRows(t, rows, Options{RowSpill: true, TempDir: t.TempDir()})
	if mst.RowSpill || !rst.RowSpill || rst.Passes != 3 {
		t.Fatalf("row spill: default %v, RowSpill %v (%d passes)", mst.RowSpill, rst.RowSpill, rst.Passes)
	}
	re.Provenance.Created = ""
	if !sst.LogSpilled || mst.LogSpilled || sst.StreamFallback == "" {
		t.Fatalf("budget 1: interference log spilled %v, streaming fallback %q", sst.LogSpilled, sst.StreamFallback)
	}
	if sst.Partitions < 2 || mst.Partitions != 1 {
		t.Fatalf("partitions: in memory %d, spilled %d", mst.Partitions, sst.Partitions)
	}
	mem.Provenance.Created, sp.Provenance.Created = "", ""
	if !reflect.DeepEqual(mem, sp) {
		t.Fatalf("spilled plan differs from in-memory plan:\n%v\n%v", mem, sp)
	}
	if !reflect.DeepEqual(mem, re) {
		t.Fatalf("plan from the row spill differs from the plan from re-reading the source:\n%v\n%v", mem, re)
	}
	if mem.Empty() {
		t.Fatal("random trace produced no candidates; the test is vacuous")
	}
}

// TestStreamingFallsBackWhenOrderMatters feeds traces whose rows arrive in
// an order the streaming pair pass cannot follow; each must fall back to
// the exact passes and give the exact result.
func TestStreamingFallsBackWhenOrderMatters(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []row
		want []string
		late bool // beyond the reorder horizon too
	}{
		{"init after a later use", []row{
			useAt(2*ms, 2, 1, 20, 0xA),
			initAt(1*ms, 1, 1, 10, 0xA),
		}, []string{"use-before-init 10→20"}, false},
		{"dispose after a later use", []row{
			useAt(2*ms, 2, 1, 20, 0xA),
			useAt(5*ms, 2, 1, 21, 0xA),
			disposeAt(3*ms, 1, 1, 30, 0xA),
		}, []string{"use-after-dispose 20→30"}, false},
		{"use after a later lifecycle row", []row{
			disposeAt(3*ms, 1, 1, 30, 0xA),
			useAt(2*ms, 2, 1, 20, 0xA),
		}, []string{"use-after-dispose 20→30"}, false},
		{"lifecycle rows out of order", []row{
			disposeAt(3*ms, 1, 1, 30, 0xA),
			initAt(1*ms, 1, 1, 10, 0xA),
			useAt(4*ms, 2, 1, 20, 0xA),
		}, nil, false},
		{"dispose arriving long after a swept use", append(append([]row{
			initAt(0, 1, 1, 10, 0xA),
			useAt(1*ms, 2, 1, 20, 0xA)},
			// 2 s of other rows: the waiting use leaves the log
			spread(0xB, 2*ms, 2100*ms, 6000)...),
			disposeAt(50*ms, 1, 1, 30, 0xA)), []string{"use-before-init 10→20", "use-after-dispose 20→30"}, true},
		{"fork after a query", []row{
			initAt(1*ms, 1, 2, 10, 0xA),
			useAt(2*ms, 2, 1, 20, 0xA),
			forkAt(1*ms, 1, 2, 2), // init (counter 2) ≤ fork counter: ordered
		}, nil, false},
	} {
		// Without reordering, each falls back.
		p, st := analyzeTuned(t, tc.rows, Options{}, &tuning{reorderHorizon: -1})
		if st.Streamed || st.StreamFallback == "" || st.Passes < 2 {
			t.Errorf("%s: streamed %v, fallback %q, %d passes; want a fallback after 1 pass", tc.name, st.Streamed, st.StreamFallback, st.Passes)
		}
		if got := pairsOf(p); !slices.Equal(got, tc.want) {
			t.Errorf("%s: pairs %q, want %q", tc.name, got, tc.want)
		}
		// The reordering puts rows back in order within its horizon.
		p, st = analyzeRows(t, tc.rows, Options{})
		if !tc.late && !st.Streamed {
			t.Errorf("%s, reordered: fell back (%q)", tc.name, st.StreamFallback)
		}
		if got := pairsOf(p); !slices.Equal(got, tc.want) {
			t.Errorf("%s, reordered: pairs %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestStreamingWalksUnsortedUsesToTheEnd: a dispose stops walking its
// object's waiting uses at the first one out of the window only when they
// arrived in time order. Here the latest-arrived use is out of the window
// and an earlier-arrived one, later in time, is in it: the walk must go on
// and find it, streamed as in the exact passes.
func TestStreamingWalksUnsortedUsesToTheEnd(t *testing.T) {
	rows := []row{
		initAt(0, 1, 1, 10, 0xA),
		useAt(150*ms, 2, 1, 20, 0xA),
		useAt(50*ms, 3, 1, 21, 0xA), // arrives after the use at 150 ms
		disposeAt(160*ms, 4, 1, 30, 0xA),
		// the same in time order: the walk stops at the use at 50 ms
		initAt(200*ms, 1, 1, 11, 0xB),
		useAt(250*ms, 3, 1, 23, 0xB),
		useAt(350*ms, 2, 1, 22, 0xB),
		disposeAt(360*ms, 4, 1, 31, 0xB),
	}
	want := []string{"use-before-init 10→21", "use-before-init 11→23", "use-after-dispose 20→30", "use-after-dispose 22→31"}
	p, st := analyzeTuned(t, rows, Options{}, &tuning{reorderHorizon: -1})
	if !st.Streamed {
		t.Fatalf("fell back (%q); the test is vacuous", st.StreamFallback)
	}
	if got := pairsOf(p); !slices.Equal(got, want) {
		t.Errorf("streamed: pairs %q, want %q", got, want)
	}
	pe, ste := analyzeTuned(t, rows, Options{}, &tuning{noStream: true})
	if got := pairsOf(pe); !slices.Equal(got, want) {
		t.Errorf("exact: pairs %q, want %q", got, want)
	}
	if st.Instances != ste.Instances || st.PrunedWindow != ste.PrunedWindow || st.PrunedSameG != ste.PrunedSameG {
		t.Errorf("counters differ: streamed %+v, exact %+v", st, ste)
	}
}

// spread returns n uses of obj by goroutine 3, evenly from t0 to t1, in
// batches of... (one batch per analyzeRows' batch size).
func spread(obj uint64, t0, t1 int64, n int) []row {
	var rows []row
	for i := range n {
		rows = append(rows, useAt(t0+(t1-t0)*int64(i)/int64(n), 3, 1, 40, obj))
	}
	return rows
}

// TestStreamingMatchesExactOnSynthetic compares the streaming pair pass
// with the exact passes on a synthetic trace of realistic shape (hot
// objects, re-used slots, forks, orphans): identical plans and counters.
func TestStreamingMatchesExactOnSynthetic(t *testing.T) {
	n := 400_000
	if testing.Short() {
		n = 100_000
	}
	src := synthSlice(n)
	// 100k rows span 20 ms of trace time: a δ of 2 ms prunes some.
	opts := Options{NearMiss: 2 * time.Millisecond}
	exact, est, err := run(context.Background(), src.Opener(), opts, &tuning{noStream: true})
	if err != nil {
		t.Fatal(err)
	}
	exact.Provenance.Created = ""
	stream, sst, err := Run(context.Background(), src.Opener(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !sst.Streamed || est.Streamed || sst.Passes != 1 || est.Passes != 2 {
		t.Fatalf("streamed %v/%v (%q), passes %d/%d", sst.Streamed, est.Streamed, sst.StreamFallback, sst.Passes, est.Passes)
	}
	stream.Provenance.Created = ""
	if !reflect.DeepEqual(stream, exact) {
		t.Fatal("streamed plan differs from the exact plan")
	}
	a, b := *sst, *est
	a.Duration, b.Duration, a.Passes, b.Passes, a.Streamed = 0, 0, 0, 0, false
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("stats differ:\nstreamed %+v\nexact    %+v", a, b)
	}
	// A waiting-use log that keeps only δ (2 ms) of trace time instead of
	// 2δ must not change anything either (the trace is sorted: no dispose
	// arrives late).
	tune := &tuning{waitKeep: 2 * time.Millisecond}
	swept, wst, err := run(context.Background(), src.Opener(), opts, tune)
	if err != nil {
		t.Fatal(err)
	}
	swept.Provenance.Created = ""
	if !wst.Streamed || tune.overwritten == 0 || !reflect.DeepEqual(swept, exact) || wst.Instances != est.Instances || wst.PrunedWindow != est.PrunedWindow {
		t.Fatalf("short log: streamed %v (%q), %d overwritten, same plan %v, stats %+v", wst.Streamed, wst.StreamFallback, tune.overwritten, reflect.DeepEqual(swept, exact), wst)
	}
	if sst.Candidates < 100 || sst.PrunedWindow == 0 || sst.PrunedFork == 0 || sst.PrunedSameG == 0 {
		t.Fatalf("synthetic trace too tame to compare: %+v", sst)
	}
}

// TestReorderHoldsBoundedRows: rows that all share one time are never
// horizon-old; the reordering releases them anyway beyond its row bound,
// with the same result as without reordering.
func TestReorderHoldsBoundedRows(t *testing.T) {
	var rows []row
	rows = append(rows, initAt(5*ms, 1, 1, 10, 0xA))
	for i := range 500 {
		rows = append(rows, useAt(5*ms, 2, 1, 20, uint64(0x100+i)))
	}
	rows = append(rows, useAt(5*ms, 2, 1, 21, 0xA), disposeAt(6*ms, 3, 1, 30, 0xA))
	p, st := analyzeTuned(t, rows, Options{}, &tuning{reorderMax: 16})
	p2, _ := analyzeTuned(t, rows, Options{}, &tuning{noStream: true})
	p.Provenance.Created, p2.Provenance.Created = "", ""
	if !st.Streamed || !reflect.DeepEqual(p, p2) || st.Events != int64(len(rows)) {
		t.Fatalf("streamed %v (%q), events %d, plans equal %v", st.Streamed, st.StreamFallback, st.Events, reflect.DeepEqual(p, p2))
	}
	wantPairs(t, p, "use-before-init 10→21", "use-after-dispose 21→30")
}

func TestReorderReleasesBeyondItsBound(t *testing.T) {
	r := newReorder(100*ms, 100)
	out := &trace.Batch{Time: make([]int64, 0, 1000), G: make([]uint64, 0, 1000), Clock: make([]uint32, 0, 1000),
		Site: make([]uint32, 0, 1000), Obj: make([]uint64, 0, 1000), Op: make([]uint8, 0, 1000)}
	for b := range 5 {
		c := source(spread(0xA, 0, ms, 60), 60).Batches[0] // 60 rows within 1 ms
		r.add(&c)
		r.drain(out, false)
		if r.held > 100 {
			t.Fatalf("batch %d: %d rows held, bound 100", b, r.held)
		}
	}
	if r.held == 0 || len(out.Time) == 0 {
		t.Fatalf("held %d, released %d: want both", r.held, len(out.Time))
	}
	r.drain(out, true)
	if r.held != 0 || len(out.Time) != 300 {
		t.Fatalf("after the final drain: held %d, released %d of 300", r.held, len(out.Time))
	}
}

// TestThinnedRowsAreCounted: a thinned row (the recorder's count of
// repeated uses it left out) is no access: it pairs with nothing and goes
// into the stats and the plan's provenance.
func TestThinnedRowsAreCounted(t *testing.T) {
	s := source([]row{
		initAt(0, 1, 1, 10, 0xA),
		useAt(5*ms, 2, 1, 20, 0xA),
		{6 * ms, 2, 1, 0, 41, abi.OpThinned},
		{9 * ms, 1, 1, 0, 2, abi.OpThinned},
	}, 10)
	p, st, err := Run(context.Background(), s.Opener(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantPairs(t, p, "use-before-init 10→20")
	if st.Thinned != 43 || st.ThinnedRows != 2 || st.Malformed != 0 || p.Provenance.Thinned != 43 {
		t.Fatalf("stats %+v, provenance thinned %d; want 43 thinned in 2 rows", st, p.Provenance.Thinned)
	}
}

// TestStreamingSmallTraceForcesNoCollection: the analysis of a small trace
// does not collect the heap after its streaming pass (collectAfter); a
// package's hundreds of short tests each paid a forced collection.
func TestStreamingSmallTraceForcesNoCollection(t *testing.T) {
	rows := []row{
		initAt(0, 1, 1, 10, 0xA),
		useAt(50*ms, 2, 1, 20, 0xA),
		disposeAt(60*ms, 3, 1, 30, 0xA),
	}
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := forced()
	_, st := analyzeTuned(t, rows, Options{}, &tuning{})
	if !st.Streamed {
		t.Fatalf("fell back (%q); the test is vacuous", st.StreamFallback)
	}
	if n := forced() - before; n != 0 {
		t.Errorf("%d forced collections for a trace of %d events; want none", n, len(rows))
	}
}
