package inject

import (
	"testing"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/lcc"
	"github.com/memorder/wafl/plans"
)

func newBasicEngine(t *testing.T, p *plans.Plan, mut func(*config)) *testEngine {
	t.Helper()
	return newTestEngine(t, p, func(c *config) {
		c.ablate |= abi.AblateBasic
		if mut != nil {
			mut(c)
		}
	})
}

// ev is one synthetic event for the online detector.
type ev struct {
	at    int64 // ns
	site  uint32
	g     uint64
	clock uint32
	obj   uintptr
	op    abi.Op
}

func (e *testEngine) play(evs ...ev) {
	for _, x := range evs {
		e.clk.set(x.at)
		clock := x.clock
		if clock == 0 {
			clock = 1
		}
		e.online(x.site, x.g, clock, x.obj, x.op)
	}
}

type trapRec struct {
	first, second uint32
	kind          string
	gap           int64
}

func (e *testEngine) traps(t *testing.T) []trapRec {
	var out []trapRec
	for _, r := range e.records(t) {
		if r["ev"] == abi.EvTrap {
			out = append(out, trapRec{uint32(r["first"].(float64)), uint32(r["second"].(float64)),
				r["kind"].(string), int64(r["gap"].(float64))})
		}
	}
	return out
}

// TestOnlineNearMiss feeds the basic-mode detector synthetic events and
// checks which pairs join the trap set (TSVD's near-miss rule as the
// thesis adapts it, §3.1).
func TestOnlineNearMiss(t *testing.T) {
	const (
		init1, use1, disp1 = 10, 20, 30
		g1, g2             = 1, 2
	)
	cases := []struct {
		name   string
		evs    []ev
		mut    func(*config)
		forked *lcc.Edge // a fork edge the run saw first
		want   []trapRec
	}{
		{"init then use in another goroutine within δ", []ev{
			{at: 0, site: init1, g: g1, obj: 0x100, op: abi.OpInit},
			{at: 5 * ms, site: use1, g: g2, obj: 0x100, op: abi.OpUse},
		}, nil, nil, []trapRec{{init1, use1, "use-before-init", 5 * ms}}},
		{"use then dispose in another goroutine", []ev{
			{at: 0, site: use1, g: g1, obj: 0x100, op: abi.OpUse},
			{at: 2 * ms, site: disp1, g: g2, obj: 0x100, op: abi.OpDispose},
		}, nil, nil, []trapRec{{use1, disp1, "use-after-dispose", 2 * ms}}},
		{"gap beyond δ", []ev{
			{at: 0, site: init1, g: g1, obj: 0x100, op: abi.OpInit},
			{at: 150 * ms, site: use1, g: g2, obj: 0x100, op: abi.OpUse},
		}, nil, nil, nil},
		{"same goroutine", []ev{
			{at: 0, site: init1, g: g1, obj: 0x100, op: abi.OpInit},
			{at: 1 * ms, site: use1, g: g1, obj: 0x100, op: abi.OpUse},
		}, nil, nil, nil},
		{"different objects", []ev{
			{at: 0, site: init1, g: g1, obj: 0x100, op: abi.OpInit},
			{at: 1 * ms, site: use1, g: g2, obj: 0x200, op: abi.OpUse},
		}, nil, nil, nil},
		{"use before init is no candidate", []ev{
			{at: 0, site: use1, g: g2, obj: 0x100, op: abi.OpUse},
			{at: 1 * ms, site: init1, g: g1, obj: 0x100, op: abi.OpInit},
		}, nil, nil, nil},
		{"a check is no access", []ev{
			{at: 0, site: init1, g: g1, obj: 0x100, op: abi.OpInit},
			{at: 1 * ms, site: use1, g: g2, obj: 0x100, op: abi.OpCheck},
		}, nil, nil, nil},
		{"a pair is added once per run", []ev{
			{at: 0, site: init1, g: g1, obj: 0x100, op: abi.OpInit},
			{at: 1 * ms, site: use1, g: g2, obj: 0x100, op: abi.OpUse},
			{at: 2 * ms, site: use1, g: 3, obj: 0x100, op: abi.OpUse},
		}, nil, nil, []trapRec{{init1, use1, "use-before-init", 1 * ms}}},
		{"a loop in one goroutine does not push the init out", []ev{
			{at: 0, site: init1, g: g1, obj: 0x100, op: abi.OpInit},
			{at: 1 * ms, site: 99, g: 3, obj: 0x100, op: abi.OpUse},
			{at: 2 * ms, site: 99, g: 3, obj: 0x100, op: abi.OpUse},
			{at: 3 * ms, site: 99, g: 3, obj: 0x100, op: abi.OpUse},
			{at: 4 * ms, site: 99, g: 3, obj: 0x100, op: abi.OpUse},
			{at: 5 * ms, site: use1, g: g2, obj: 0x100, op: abi.OpUse},
		}, func(c *config) { c.ablate |= abi.AblateHB }, nil, []trapRec{
			{init1, 99, "use-before-init", 1 * ms}, {init1, use1, "use-before-init", 5 * ms}}},
		{"init before the fork is ordered", []ev{
			{at: 0, site: init1, g: g1, clock: 1, obj: 0x100, op: abi.OpInit},
			{at: 1 * ms, site: use1, g: g2, clock: 1, obj: 0x100, op: abi.OpUse},
		}, nil, &lcc.Edge{Parent: g1, Clock: 1, Child: g2}, nil},
		{"init after the fork is concurrent", []ev{
			{at: 0, site: init1, g: g1, clock: 2, obj: 0x100, op: abi.OpInit},
			{at: 1 * ms, site: use1, g: g2, clock: 1, obj: 0x100, op: abi.OpUse},
		}, nil, &lcc.Edge{Parent: g1, Clock: 1, Child: g2}, []trapRec{{init1, use1, "use-before-init", 1 * ms}}},
		{"parent-child ablated keeps the ordered pair", []ev{
			{at: 0, site: init1, g: g1, clock: 1, obj: 0x100, op: abi.OpInit},
			{at: 1 * ms, site: use1, g: g2, clock: 1, obj: 0x100, op: abi.OpUse},
		}, func(c *config) { c.ablate |= abi.AblateParentChild }, &lcc.Edge{Parent: g1, Clock: 1, Child: g2},
			[]trapRec{{init1, use1, "use-before-init", 1 * ms}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newBasicEngine(t, testPlan(), tc.mut)
			if tc.forked != nil {
				if err := e.basic.forest.Add(*tc.forked); err != nil {
					t.Fatal(err)
				}
			}
			e.play(tc.evs...)
			got := e.traps(t)
			if len(got) != len(tc.want) {
				t.Fatalf("traps %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("trap %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			for _, w := range tc.want {
				l := e.basic.traps.find(w.first)
				if l == nil || l.prob() != 1 || l.dead.Load() {
					t.Fatalf("location %d not live in the trap set", w.first)
				}
			}
		})
	}
}

// TestOnlineDelaysInSameRun: once a near miss put the init in the trap
// set, its next instance is delayed by α × the gap (or 100 ms with
// fixed-delay), in the same run.
func TestOnlineDelaysInSameRun(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		e := newBasicEngine(t, testPlan(), func(c *config) {
			if fixed {
				c.ablate |= abi.AblateFixedDelay
			}
		})
		e.play(
			ev{at: 0, site: 10, g: 1, obj: 0x100, op: abi.OpInit},
			ev{at: 8 * ms, site: 20, g: 2, obj: 0x100, op: abi.OpUse},
			ev{at: 50 * ms, site: 10, g: 1, obj: 0x300, op: abi.OpInit},
		)
		want := e.params.Delay(8 * ms)
		if fixed {
			want = abi.FixedDelayNs
		}
		var delays []int64
		for _, r := range e.records(t) {
			if r["ev"] == abi.EvDelay && r["site"] == float64(10) {
				delays = append(delays, int64(r["ns"].(float64)))
			}
		}
		if len(delays) != 1 || delays[0] != want {
			t.Errorf("fixed=%v: delays at the init %v, want one of %d ns", fixed, delays, want)
		}
		if got := e.clk.t.Load(); got != 50*ms+want {
			t.Errorf("fixed=%v: clock after the delay %d, want %d", fixed, got, 50*ms+want)
		}
	}
}

// TestOnlineStartsFromPlan: the plan's pairs (earlier runs' traps) are the
// initial trap set: delayed at their first instance, not logged again.
func TestOnlineStartsFromPlan(t *testing.T) {
	e := newBasicEngine(t, testPlan(location(10, 5*ms, 1, 20)), nil)
	e.play(
		ev{at: 0, site: 10, g: 1, obj: 0x100, op: abi.OpInit},
		ev{at: 1 * ms, site: 20, g: 2, obj: 0x100, op: abi.OpUse},
	)
	recs := e.records(t)
	if n := count(recs, abi.EvDelay, nil); n != 1 {
		t.Errorf("%d delays, want 1 at the planned init", n)
	}
	if n := count(recs, abi.EvTrap, nil); n != 0 {
		t.Errorf("%d trap records for a pair the plan has", n)
	}
}

// TestOnlineNewPairRevives: a location decay took out gets probability 1
// again when it gains a new pair (TSVD).
func TestOnlineNewPairRevives(t *testing.T) {
	e := newBasicEngine(t, testPlan(location(10, 5*ms, 0, 20)), nil)
	if l := e.basic.traps.find(10); l == nil || !l.dead.Load() {
		t.Fatal("the plan's dead location is not in the trap set, dead")
	}
	e.play(
		ev{at: 0, site: 10, g: 1, obj: 0x100, op: abi.OpInit},
		ev{at: 1 * ms, site: 21, g: 2, obj: 0x100, op: abi.OpUse},
	)
	if l := e.basic.traps.find(10); l.dead.Load() || l.prob() != 1 {
		t.Errorf("location 10 after a new pair: dead %v, p %v", l.dead.Load(), l.prob())
	}
}

// TestAtUnchangedOutsideBasic: outside basic mode there is no online
// state, and Basic reports false.
func TestAtUnchangedOutsideBasic(t *testing.T) {
	e := newTestEngine(t, testPlan(location(10, 5*ms, 1, 20)), nil)
	if e.basic != nil {
		t.Fatal("online state outside basic mode")
	}
	old := eng
	eng = e.engine
	defer func() { eng = old }()
	if Basic() {
		t.Error("Basic() in a planned run")
	}
}

func BenchmarkAccessBasic(b *testing.B) {
	p := testPlan()
	fc := &fakeClock{}
	e, err := newEngine(config{plan: p, seed: 1, ablate: abi.AblateBasic}, fc.clock())
	if err != nil {
		b.Fatal(err)
	}
	old := eng
	eng = e
	defer func() { eng = old }()
	var x [64]int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fc.t.Add(1000)
		Access(uint32(i%64+1), unsafe.Pointer(&x[i%64]), abi.OpUse)
	}
}

// TestAccessNoAllocs: basic mode's hook allocates nothing for an access
// that completes no new near miss.
func TestAccessNoAllocs(t *testing.T) {
	fc := &fakeClock{}
	e, err := newEngine(config{plan: testPlan(), seed: 1, ablate: abi.AblateBasic}, fc.clock())
	if err != nil {
		t.Fatal(err)
	}
	old := eng
	eng = e
	defer func() { eng = old }()
	var x int
	n := testing.AllocsPerRun(1000, func() {
		fc.t.Add(1000)
		Access(5, unsafe.Pointer(&x), abi.OpUse)
	})
	if n != 0 {
		t.Errorf("Access allocates %v times per call", n)
	}
}
