package inject

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

const ms = int64(time.Millisecond)

// fakeClock is a manual clock: sleep advances it, so engine logic is
// tested without wall-clock timing.
type fakeClock struct {
	t atomic.Int64
	// sleepHook, if set, runs after each sleep (a test's other goroutine
	// acting while one sleeps); midHook at its start, before the clock
	// moves (acting during the sleep).
	sleepHook func()
	midHook   func()
}

func (c *fakeClock) clock() clock {
	return clock{
		now: func() int64 { return c.t.Load() },
		sleep: func(ns int64) {
			if c.midHook != nil {
				c.midHook()
			}
			c.t.Add(ns)
			if c.sleepHook != nil {
				c.sleepHook()
			}
		},
		unixStart: 1,
	}
}

func (c *fakeClock) set(ns int64) { c.t.Store(ns) }

// testPlan builds a valid plan from locations given as
// (site, delay, prob, pairs, interference).
func testPlan(locs ...plans.Location) *plans.Plan {
	p := &plans.Plan{Version: plans.Version, Params: plans.DefaultParams(), Locations: locs}
	for i := range p.Locations {
		l := &p.Locations[i]
		for j := range l.Pairs {
			pr := &l.Pairs[j]
			pr.First = l.Site
			if pr.Count == 0 {
				pr.Count = 1
			}
			if pr.Kind == "" {
				pr.Kind = plans.UseBeforeInit
			}
		}
	}
	return p
}

func location(site uint32, delay int64, prob float64, seconds ...uint32) plans.Location {
	l := plans.Location{Site: site, DelayNs: delay, Prob: prob}
	for _, s := range seconds {
		l.Pairs = append(l.Pairs, plans.Pair{Second: s})
	}
	return l
}

type testEngine struct {
	*engine
	clk     *fakeClock
	logPath string
}

func newTestEngine(t *testing.T, p *plans.Plan, mut func(*config)) *testEngine {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatalf("test plan invalid: %v", err)
	}
	fc := &fakeClock{}
	cfg := config{plan: p, planPath: "plan.json", seed: 42, seedSet: true, run: 1,
		logPath: filepath.Join(t.TempDir(), "run.log")}
	if mut != nil {
		mut(&cfg)
	}
	e, err := newEngine(cfg, fc.clock())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.log.f.Close() })
	e.logSetup()
	return &testEngine{engine: e, clk: fc, logPath: cfg.logPath}
}

// hit simulates goroutine g reaching site.
func (e *testEngine) hit(site uint32, g uint64) {
	if l := e.fast.find(site); l != nil && l.on.Load() != 0 {
		e.event(l, g, 0x1000)
	}
}

func (e *testEngine) records(t *testing.T) []map[string]any {
	t.Helper()
	f, err := os.Open(e.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func count(recs []map[string]any, ev string, where func(map[string]any) bool) int {
	n := 0
	for _, r := range recs {
		if r["ev"] == ev && (where == nil || where(r)) {
			n++
		}
	}
	return n
}

func TestTableOnlyPlannedSites(t *testing.T) {
	p := testPlan(location(3, 10*ms, 1, 5), location(4, 10*ms, 0, 6))
	e := newTestEngine(t, p, nil)
	if len(e.table) != 3 {
		t.Fatalf("table has %d entries, want 3 (sites 3, 4 and 3's partner 5)", len(e.table))
	}
	for site, want := range map[uint32]bool{1: false, 3: true, 5: true, 4: false, 6: false} {
		l := e.table[site]
		on := l != nil && l.on.Load() != 0
		if on != want {
			t.Errorf("site %d on = %v, want %v", site, on, want)
		}
	}
}

func TestDecayRemovesLocation(t *testing.T) {
	p := testPlan(location(1, 5*ms, 1, 2))
	p.Params.Decay = 0.25
	e := newTestEngine(t, p, func(c *config) { c.ablate |= abi.AblateHB })
	for range 10 {
		e.hit(1, 7)
	}
	l := e.table[1]
	if got := l.delays.Load(); got != 4 {
		t.Errorf("delays = %d, want 4 (P: 1, .75, .5, .25 → 0)", got)
	}
	if l.prob() != 0 || !l.dead.Load() || l.on.Load() != 0 {
		t.Errorf("after decay to 0: prob %v dead %v on %d, want 0 true 0", l.prob(), l.dead.Load(), l.on.Load())
	}
	e.finish()
	recs := e.records(t)
	if n := count(recs, abi.EvDelay, nil); n != 4 {
		t.Errorf("log has %d delay records, want 4", n)
	}
	if n := count(recs, abi.EvEnd, func(r map[string]any) bool { return r["p"] == 0.0 }); n != 1 {
		t.Errorf("log has %d end records with p=0, want 1", n)
	}
	if n := count(recs, abi.EvLoc, func(r map[string]any) bool { return r["p"] == 0.0 && r["live"] == false }); n != 1 {
		t.Errorf("finish did not log site 1 at p=0: %v", recs)
	}
}

func TestNoDecayAblation(t *testing.T) {
	p := testPlan(location(1, 1*ms, 1, 2))
	e := newTestEngine(t, p, func(c *config) { c.ablate |= abi.AblateDecay })
	for range 20 {
		e.hit(1, 7)
	}
	if got := e.table[1].delays.Load(); got != 20 {
		t.Errorf("delays = %d, want 20 with decay off", got)
	}
}

func TestDecisionsReproducible(t *testing.T) {
	decisions := func(seed uint64) []bool {
		p := testPlan(location(1, 1*ms, 0.5, 2))
		e := newTestEngine(t, p, func(c *config) { c.seed = seed; c.ablate |= abi.AblateDecay })
		var out []bool
		for range 64 {
			before := e.table[1].delays.Load()
			e.hit(1, 7)
			out = append(out, e.table[1].delays.Load() > before)
		}
		return out
	}
	a, b, c := decisions(1), decisions(1), decisions(2)
	delays := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 1 gave different decisions for instance %d", i)
		}
		if a[i] {
			delays++
		}
	}
	if delays < 16 || delays > 48 {
		t.Errorf("P=0.5 delayed %d of 64 instances", delays)
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Errorf("seeds 1 and 2 made the same 64 decisions")
	}
}

func TestUniformRange(t *testing.T) {
	var sum float64
	for n := range uint64(10000) {
		u := uniform(99, 3, n)
		if u < 0 || u >= 1 {
			t.Fatalf("uniform = %v, out of [0,1)", u)
		}
		sum += u
	}
	if m := sum / 10000; m < 0.45 || m > 0.55 {
		t.Errorf("mean of 10000 draws = %v", m)
	}
}

func TestInterferenceSkip(t *testing.T) {
	for _, off := range []bool{false, true} {
		p := testPlan(location(1, 10*ms, 1, 2), location(3, 10*ms, 1, 4))
		p.Locations[0].Interference = []uint32{3}
		p.Params.Decay = 0
		e := newTestEngine(t, p, func(c *config) {
			if off {
				c.ablate |= abi.AblateInterference
			}
		})
		e.table[3].active.Store(1) // a delay at 3 is in progress, 1 s more
		e.table[3].until.Store(int64(time.Second))
		e.hit(1, 7)
		want := int64(1)
		if !off {
			want = 0
		}
		if got := e.table[1].delays.Load(); got != want {
			t.Errorf("ablate interference=%v: delays at 1 = %d, want %d", off, got, want)
		}
		e.table[3].active.Store(0)
		e.hit(1, 7)
		if got := e.table[1].delays.Load(); got != want+1 {
			t.Errorf("ablate interference=%v: no delay once the interfering delay ended", off)
		}
		recs := e.records(t)
		n := count(recs, abi.EvSkip, func(r map[string]any) bool { return r["why"] == abi.SkipInterference && r["by"] == 3.0 })
		if n != int(1-want) {
			t.Errorf("ablate interference=%v: %d interference skip records", off, n)
		}
	}
}

func TestCaps(t *testing.T) {
	p := testPlan(location(1, 10*ms, 1, 2))
	p.Params.Decay = 0
	p.Params.MaxDelayPerGoroutineNs = 25 * ms
	p.Params.MaxDelayPerRunNs = 45 * ms
	e := newTestEngine(t, p, nil)
	for range 5 {
		e.hit(1, 7) // g7: 2 delays, then the goroutine cap
	}
	if got := e.perG[7]; got != 20*ms {
		t.Errorf("goroutine 7 delayed %d ns, want 20 ms", got)
	}
	for range 5 {
		e.hit(1, 8) // g8: 2 delays (run total 40 ms), then the run cap
	}
	for range 5 {
		e.hit(1, 9) // run cap: 45 ms leaves no room for a 10 ms delay
	}
	if got := e.total.Load(); got != 40*ms {
		t.Errorf("run delayed %d ns, want 40 ms", got)
	}
	if e.skipCapG.Load() != 3 || e.skipCapR.Load() < 5 {
		t.Errorf("skips: goroutine cap %d (want 3), run cap %d (want ≥ 5)", e.skipCapG.Load(), e.skipCapR.Load())
	}
}

func TestCapsRealClock(t *testing.T) {
	p := testPlan(location(1, 2*ms, 1, 2))
	p.Params.Decay = 0
	p.Params.MaxDelayPerGoroutineNs = 10 * ms
	p.Params.MaxDelayPerRunNs = 16 * ms
	cfg := config{plan: p, seed: 1}
	e, err := newEngine(cfg, realClock())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 20 {
				e.at(e.table[1], 0)
			}
		}()
	}
	for range 4 {
		<-done
	}
	if d := e.nDelays.Load(); d != 8 || e.total.Load() != 16*ms {
		t.Errorf("%d delays, %d ns in total; want 8 delays of 2 ms (run cap 16 ms)", d, e.total.Load())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for g, d := range e.perG {
		if d > 10*ms {
			t.Errorf("goroutine %d delayed %d ns, over the 10 ms cap", g, d)
		}
	}
}

// TestHBInference checks the definition in inferHB with a manual clock:
// site 1 (ℓ1) delays 10 ms in goroutine 1 from t=100 ms to t=110 ms;
// goroutine 2 last touched a watched site at t0 and reaches ℓ2 = site 2
// at t2. A location whose delay never grew gets a late record instead of
// a prune (the delay may just have been too short); once grown, the same
// observation prunes.
func TestHBInference(t *testing.T) {
	cases := []struct {
		name   string
		g2     uint64
		t0, t2 int64 // ms; t0 < 0: no previous watched event
		prune  bool  // for a grown location
		late   bool  // for a location that never grew
	}{
		{"stalled until right after the delay", 2, 95, 111, true, true},
		{"stalled, ℓ2 at the delay's end", 2, 99, 110, true, true},
		{"ℓ2 during the delay (the bug window)", 2, 95, 105, false, false},
		{"ℓ2 long after the delay", 2, 95, 150, false, false},
		{"gap too short", 2, 108, 111, false, true},
		{"gap before the delay ended", 2, 50, 99, false, false},
		{"same goroutine", 1, 95, 111, false, false},
		{"no previous event", 2, -1, 111, false, true},
	}
	for _, c := range cases {
		t.Run(c.name+"/not grown", func(t *testing.T) {
			p := testPlan(location(1, 10*ms, 1, 2), location(3, 10*ms, 1, 4))
			e := newTestEngine(t, p, nil)
			if c.t0 >= 0 {
				e.clk.set(c.t0 * ms)
				e.hit(4, c.g2)
			}
			e.clk.set(100 * ms)
			e.hit(1, 1)
			e.clk.set(c.t2 * ms)
			e.hit(2, c.g2)
			if e.table[1].pairs[0].pruned.Load() {
				t.Fatalf("pruned a pair of a location whose delay never grew")
			}
			n := count(e.records(t), abi.EvLate, func(r map[string]any) bool {
				return r["first"] == 1.0 && r["second"] == 2.0 && r["need_ns"] == float64((c.t2-100)*ms)
			})
			if (n == 1) != c.late {
				t.Fatalf("%d late records, want late=%v", n, c.late)
			}
		})
		t.Run(c.name, func(t *testing.T) {
			p := testPlan(location(1, 10*ms, 1, 2), location(3, 10*ms, 1, 4))
			p.Locations[0].Grown = 1
			e := newTestEngine(t, p, nil)
			if c.t0 >= 0 {
				e.clk.set(c.t0 * ms)
				e.hit(4, c.g2) // a watched site (partner of 3)
			}
			e.clk.set(100 * ms)
			e.hit(1, 1) // delays 10 ms: [100, 110]
			e.clk.set(c.t2 * ms)
			e.hit(2, c.g2)
			pruned := e.table[1].pairs[0].pruned.Load()
			if pruned != c.prune {
				t.Fatalf("pruned = %v, want %v", pruned, c.prune)
			}
			if pruned {
				if !e.table[1].dead.Load() {
					t.Errorf("location 1 lost its only pair but is still live")
				}
				recs := e.records(t)
				if count(recs, abi.EvHB, func(r map[string]any) bool {
					return r["first"] == 1.0 && r["second"] == 2.0 && r["delay_g"] == 1.0 && r["g"] == float64(c.g2)
				}) != 1 {
					t.Errorf("no hb record in the log")
				}
			}
		})
	}
}

func TestHBAblation(t *testing.T) {
	p := testPlan(location(1, 10*ms, 1, 2), location(3, 10*ms, 1, 4))
	e := newTestEngine(t, p, func(c *config) { c.ablate |= abi.AblateHB })
	if e.table[2].on.Load() == 0 {
		t.Errorf("partner site not watched (reorders are tracked with HB inference off too)")
	}
	// The stall of TestHBInference's first case prunes nothing.
	e.clk.set(95 * ms)
	e.hit(4, 2)
	e.clk.set(100 * ms)
	e.hit(1, 1)
	e.clk.set(111 * ms)
	e.hit(2, 2)
	if e.table[1].pairs[0].pruned.Load() || e.hbPrunes.Load() != 0 {
		t.Errorf("pair pruned with HB inference ablated")
	}
}

func TestReorderLogged(t *testing.T) {
	p := testPlan(location(1, 10*ms, 1, 2))
	e := newTestEngine(t, p, nil)
	// A delay at 1 on object 0x1000 in goroutine 1 is in progress.
	e.flight = append(e.flight, inflight{id: 9, site: 1, g: 1, obj: 0x1000})
	e.active.Store(1)
	e.clk.set(5 * ms)
	e.hit(2, 2)                    // another goroutine touches the object at ℓ2
	e.hit(2, 2)                    // again: logged once
	e.hit(2, 1)                    // the delayed goroutine itself: no reorder
	e.event(e.table[2], 3, 0x2000) // another object: no reorder
	e.flight = nil
	e.active.Store(0)
	e.hit(2, 4) // no delay in progress
	recs := e.records(t)
	n := count(recs, abi.EvReorder, nil)
	if n != 1 || count(recs, abi.EvReorder, func(r map[string]any) bool {
		return r["first"] == 1.0 && r["second"] == 2.0 && r["id"] == 9.0 && r["g"] == 2.0 &&
			r["delay_g"] == 1.0 && r["obj"] == float64(0x1000) && r["t"] == float64(5*ms)
	}) != 1 {
		t.Errorf("%d reorder records: %v", n, recs)
	}
	if e.reorders.Load() != 1 {
		t.Errorf("reorder count %d", e.reorders.Load())
	}
}

// A real delay registers in flight while it sleeps and leaves after.
func TestInflightDuringDelay(t *testing.T) {
	p := testPlan(location(1, 10*ms, 1, 2))
	e := newTestEngine(t, p, nil)
	var seen []inflight
	e.engine.clk.sleep = func(ns int64) {
		e.fmu.Lock()
		seen = append(seen, e.flight...)
		e.fmu.Unlock()
	}
	e.event(e.table[1], 7, 0x1234)
	if len(seen) != 1 || seen[0].site != 1 || seen[0].g != 7 || seen[0].obj != 0x1234 {
		t.Errorf("in flight during the delay: %+v", seen)
	}
	if len(e.flight) != 0 {
		t.Errorf("still in flight after the delay: %+v", e.flight)
	}
}

// TestOwnDelayIsNotAStall: a goroutine's own delay between two watched
// events does not count as a stall caused by another goroutine's delay.
func TestOwnDelayIsNotAStall(t *testing.T) {
	p := testPlan(location(1, 10*ms, 1, 2), location(3, 10*ms, 1, 2))
	p.Params.Decay = 0
	e := newTestEngine(t, p, nil)
	e.clk.set(100 * ms)
	e.hit(1, 1) // g1 delays [100, 110]
	e.clk.set(100 * ms)
	e.hit(3, 2) // g2 delays [100, 110] at its own location, t0 := 110
	e.hit(2, 2) // t2 = 110: gap 0
	if e.table[1].pairs[0].pruned.Load() {
		t.Errorf("pair (1,2) pruned though g2 was stalled by its own delay")
	}
}

// TestFinishGraceEndsEarly: with no delayed goroutine still active the
// grace period ends graceMinNs after the last delay, not GraceNs.
func TestFinishGraceEndsEarly(t *testing.T) {
	p := testPlan(location(1, 10*ms, 1, 2))
	p.Params.GraceNs = 30 * ms
	e := newTestEngine(t, p, nil)
	e.runningHook = func() bool { return false }
	e.clk.set(0)
	e.hit(1, 1) // ends at 10 ms
	e.clk.set(12 * ms)
	e.finish()
	if now := e.clk.t.Load(); now < 10*ms+graceMinNs || now >= 10*ms+graceMinNs+graceStepNs {
		t.Errorf("finish returned at %d ns, want within a step after %d ns", now, 10*ms+graceMinNs)
	}
}

func TestAnyActive(t *testing.T) {
	dump := []byte("goroutine 1 [running]:\nmain.main()\n\ngoroutine 7 [chan receive, 2 minutes]:\nx()\n\n" +
		"goroutine 9 [sync.Mutex.Lock]:\ny()\n\ngoroutine 11 [select]:\n")
	for _, c := range []struct {
		gs   []uint64
		want bool
	}{{[]uint64{7}, false}, {[]uint64{7, 11}, false}, {[]uint64{9}, true}, {[]uint64{1}, true}, {[]uint64{42}, false}} {
		gs := map[uint64]bool{}
		for _, g := range c.gs {
			gs[g] = true
		}
		if got := anyActive(dump, gs); got != c.want {
			t.Errorf("anyActive(%v) = %v, want %v", c.gs, got, c.want)
		}
	}
}

func TestFinishDrainsAndStops(t *testing.T) {
	p := testPlan(location(1, 10*ms, 1, 2))
	p.Params.GraceNs = 30 * ms
	e := newTestEngine(t, p, nil)
	e.runningHook = func() bool { return true } // a delayed goroutine never settles
	e.clk.set(0)
	e.hit(1, 1) // ends at 10 ms
	e.clk.set(15 * ms)
	e.finish()
	if now := e.clk.t.Load(); now != 40*ms {
		t.Errorf("finish returned at %d ms, want 40 ms (last delay end 10 ms + grace 30 ms)", now/ms)
	}
	before := e.nDelays.Load()
	e.event(e.table[1], 1, 0)
	if e.nDelays.Load() != before {
		t.Errorf("delay injected after finish")
	}
	e.finish() // idempotent
	if n := count(e.records(t), abi.EvFinish, nil); n != 1 {
		t.Errorf("%d finish records, want 1", n)
	}
}

func TestFinishWithoutDelaysDoesNotWait(t *testing.T) {
	e := newTestEngine(t, testPlan(location(1, 10*ms, 1, 2)), nil)
	e.finish()
	if now := e.clk.t.Load(); now != 0 {
		t.Errorf("finish waited %d ns with no delay injected", now)
	}
}

func TestGtable(t *testing.T) {
	var g gtable
	if _, ok := g.swap(5, 1000); ok {
		t.Fatal("fresh table has an event")
	}
	if prev, ok := g.swap(5, 7000); !ok || prev != 1000 {
		t.Fatalf("swap = %d, %v; want 1000, true", prev, ok)
	}
	other := uint64(5 + 1<<gtabBits) // same slot, other goroutine
	if _, ok := g.swap(other, 9000); ok {
		t.Fatal("collision returned another goroutine's event")
	}
	if _, ok := g.swap(5, 9500); ok {
		t.Fatal("evicted goroutine still has an event")
	}
}

func TestLogStringEscaping(t *testing.T) {
	for _, s := range []string{"plain", `q"uote\back`, "ctl\x00\n\t", "ü日本", "bad\xffutf8"} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q encoded as %s: %v", s, b, err)
		}
		if s != "bad\xffutf8" && got != s {
			t.Errorf("round trip %q → %s → %q", s, b, got)
		}
	}
}

func TestParseAblation(t *testing.T) {
	a, err := abi.ParseAblation("hb, interference")
	if err != nil || !a.Has(abi.AblateHB) || !a.Has(abi.AblateInterference) || a.Has(abi.AblateDecay) || a.String() != "interference,hb" {
		t.Fatalf("ParseAblation = %v, %v", a, err)
	}
	if a.String() != "interference,hb" {
		t.Errorf("String = %q", a.String())
	}
	if _, err := abi.ParseAblation("hb,bogus"); err == nil {
		t.Error("unknown part accepted")
	}
}

// The hook at a site the plan does not mention, and at a planned site
// whose probability is 0, must not allocate.
func TestHookNoAllocs(t *testing.T) {
	restore := installTestEngine(t)
	defer restore()
	var x int
	for _, site := range []uint32{0, 2, 1 << 20, pZeroSite} {
		if n := testing.AllocsPerRun(1000, func() { At(site, unsafe.Pointer(&x)) }); n != 0 {
			t.Errorf("At(%d) allocates %v times per call", site, n)
		}
	}
}

const pZeroSite = 5

// installTestEngine installs a global engine with site 1 planned (P=1,
// partner 3) and site 5 planned with P=0, for the hook benchmarks.
func installTestEngine(tb testing.TB) func() {
	p := testPlan(location(1, 1*ms, 1, 3), location(pZeroSite, 1*ms, 0, 6))
	fc := &fakeClock{}
	e, err := newEngine(config{plan: p, seed: 1}, fc.clock())
	if err != nil {
		tb.Fatal(err)
	}
	oldE, oldT := eng, table
	eng, table = e, e.fast
	return func() { eng, table = oldE, oldT }
}

func BenchmarkAtUnplanned(b *testing.B) {
	defer installTestEngine(b)()
	var x int
	b.ReportAllocs()
	for b.Loop() {
		At(2, unsafe.Pointer(&x))
	}
}

func BenchmarkAtPlannedProbZero(b *testing.B) {
	defer installTestEngine(b)()
	var x int
	b.ReportAllocs()
	for b.Loop() {
		At(pZeroSite, unsafe.Pointer(&x))
	}
}

func BenchmarkAtDisabled(b *testing.B) {
	oldE, oldT := eng, table
	eng, table = nil, siteTable{}
	defer func() { eng, table = oldE, oldT }()
	var x int
	b.ReportAllocs()
	for b.Loop() {
		At(1, unsafe.Pointer(&x))
	}
}

// BenchmarkAtWatched is a partner site watched for HB inference: a
// goroutine id, a clock read and one atomic swap.
func BenchmarkAtWatched(b *testing.B) {
	defer installTestEngine(b)()
	var x int
	b.ReportAllocs()
	for b.Loop() {
		At(3, unsafe.Pointer(&x))
	}
}

// BenchmarkAtWatchedParallel: watched-site events from all Ps at once
// (each goroutine swaps its own slot of the goroutine table).
func BenchmarkAtWatchedParallel(b *testing.B) {
	defer installTestEngine(b)()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var x int
		for pb.Next() {
			At(3, unsafe.Pointer(&x))
		}
	})
}

// BenchmarkAtDecision: a live location at P = 0.5 (decay off) with a
// 1 ns delay and a no-op sleep: about half the instances take the
// probability skip, half the whole delay path (caps, bookkeeping) without
// sleeping.
func BenchmarkAtDecision(b *testing.B) {
	p := testPlan(location(1, 1, 0.5, 3))
	p.Params.Decay = 0
	p.Params.MaxDelayPerRunNs = 1 << 62
	p.Params.MaxDelayPerGoroutineNs = 1 << 62
	e, err := newEngine(config{plan: p, seed: 1, ablate: abi.AblateHB}, clock{
		now: func() int64 { return 0 }, sleep: func(int64) {}})
	if err != nil {
		b.Fatal(err)
	}
	oldE, oldT := eng, table
	eng, table = e, e.fast
	defer func() { eng, table = oldE, oldT }()
	var x int
	b.ReportAllocs()
	for b.Loop() {
		At(1, unsafe.Pointer(&x))
	}
}

func TestProbabilitySkipsLogged(t *testing.T) {
	p := testPlan(location(1, 1*ms, 0.5, 2))
	e := newTestEngine(t, p, func(c *config) { c.ablate |= abi.AblateDecay })
	for range 100 {
		e.hit(1, 7)
	}
	recs := e.records(t)
	skips := count(recs, abi.EvSkip, func(r map[string]any) bool { return r["why"] == abi.SkipProbability && r["site"] == 1.0 })
	if int64(skips) != e.table[1].skipProb.Load() || skips+int(e.table[1].delays.Load()) != 100 || skips == 0 {
		t.Errorf("%d probability skip records, counter %d, delays %d", skips, e.table[1].skipProb.Load(), e.table[1].delays.Load())
	}
}

// TestLogMatchesRunLogTable writes one record of every kind and checks
// its keys against the run log's shape in abi.RunLog, which internal/report
// reads by.
func TestLogMatchesRunLogTable(t *testing.T) {
	e := newTestEngine(t, testPlan(location(1, 5*ms, 1, 2)), nil)
	l := e.table[1]
	e.logDelay(l, 7, 0, 1, 0x1000, 5*ms, 10)
	e.logEnd(l, 7, 1, 5*ms, 20, 0.5)
	e.logSkip(l, 7, 1, abi.SkipProbability, 0)
	e.logSkip(l, 7, 2, abi.SkipInterference, 3)
	e.logPartnerSkip(l, 7, 3, l)
	e.logHB(l, 2, 8, delayRec{id: 1, g: 7, ts: 10, te: 20}, 15, 25)
	e.logReorder(inflight{id: 1, site: 1, g: 7}, 2, 8, 0x1000, 30)
	e.logPanic(1, 7, 0x1000, abi.PanicCloseClosed)
	e.logLate(l, 2, 8, delayRec{id: 1, g: 7, ts: 10, te: 20}, 21)
	e.logTrap(plans.UseBeforeInit, access{obj: 0x1000, t: 5, g: 7, site: 1}, access{obj: 0x1000, t: 9, g: 8, site: 2}, 5*ms)
	e.logAwait(l, 7, 5*ms)
	e.logFinish(0)
	seen := map[string]bool{}
	for _, r := range e.records(t) {
		ev, _ := r["ev"].(string)
		var spec *abi.RunLogRecord
		for i := range abi.RunLog {
			if abi.RunLog[i].Ev == ev {
				spec = &abi.RunLog[i]
			}
		}
		if spec == nil {
			t.Errorf("record kind %q is not in abi.RunLog", ev)
			continue
		}
		seen[ev] = true
		want := map[string]bool{"ev": true, "t": true}
		for _, k := range spec.Keys {
			want[k] = true
			if _, ok := r[k]; !ok {
				t.Errorf("%s record %v lacks %q", ev, r, k)
			}
		}
		for _, k := range spec.Optional {
			want[k] = true
		}
		for k := range r {
			if !want[k] {
				t.Errorf("%s record %v has %q, not in abi.RunLog", ev, r, k)
			}
		}
	}
	for _, spec := range abi.RunLog {
		if !seen[spec.Ev] {
			t.Errorf("no %s record written", spec.Ev)
		}
	}
}

func TestRunSlackAddedToLearnedDelay(t *testing.T) {
	p := testPlan(location(3, 10*ms, 1, 5), location(4, 99*ms, 1, 6), location(7, 150*ms, 1, 8))
	p.Params.SlackNs = 2 * ms
	p.Params.MaxDelayNs = 100 * ms
	e := newTestEngine(t, p, nil)
	for site, want := range map[uint32]int64{
		3: 12 * ms,  // learned length plus the slack
		4: 100 * ms, // clamped to the bound
		7: 150 * ms, // already past the bound: kept, no slack
	} {
		if got := e.table[site].delayNs; got != want {
			t.Errorf("site %d: delay %d, want %d", site, got, want)
		}
	}
	fixed := newTestEngine(t, testPlan(location(3, 10*ms, 1, 5)), func(c *config) { c.ablate |= abi.AblateFixedDelay })
	if got := fixed.table[3].delayNs; got != abi.FixedDelayNs {
		t.Errorf("fixed-delay ablation: delay %d, want %d", got, abi.FixedDelayNs)
	}
}

// uadLocation is a use-after-dispose location: use site, dispose seconds.
func uadLocation(site uint32, delay int64, prob float64, seconds ...uint32) plans.Location {
	l := location(site, delay, prob, seconds...)
	for i := range l.Pairs {
		l.Pairs[i].Kind = plans.UseAfterDispose
	}
	return l
}

// The first dispose at a partner site waits, when the use has not come
// yet in this run (a late partner), until it comes or for the run's
// maximum delay, once per run; it does not wait when the use came, for a
// use-before-init pair, or when the location's draw will not delay its
// first instance.
func TestAwaitLatePartner(t *testing.T) {
	e := newTestEngine(t, testPlan(uadLocation(1, 5*ms, 1, 2)), nil)
	bound := e.params.MaxDelayNs
	e.clk.set(10 * ms)
	e.hit(2, 7) // the dispose; the use (site 1) never comes
	if got := e.clk.t.Load(); got != 10*ms+bound {
		t.Fatalf("dispose waited until %d, want %d", got, 10*ms+bound)
	}
	if e.total.Load() != bound {
		t.Fatalf("budget charged %d, want %d", e.total.Load(), bound)
	}
	e.hit(2, 7) // a second dispose: no second wait
	if got := e.clk.t.Load(); got != 10*ms+bound || e.awaits.Load() != 1 {
		t.Fatalf("second dispose: clock %d, awaits %d", got, e.awaits.Load())
	}
	e.logFinish(0)
	if n := count(e.records(t), abi.EvAwait, func(r map[string]any) bool { return r["site"] == 2.0 && r["ns"] == float64(bound) }); n != 1 {
		t.Errorf("%d await records, want 1", n)
	}

	// The partner arrives during the wait: the dispose goes on at once.
	e = newTestEngine(t, testPlan(uadLocation(1, 5*ms, 1, 2)), nil)
	steps := 0
	e.clk.sleepHook = func() {
		if steps++; steps == 3 {
			e.table[1].instances.Add(1) // the late goroutine reached site 1
		}
	}
	e.hit(2, 7)
	if got := e.clk.t.Load(); got != 3*awaitStepNs {
		t.Fatalf("partner came after 3 steps: dispose waited until %d", got)
	}
	e.clk.sleepHook = nil

	// The use came first: the dispose does not wait.
	e = newTestEngine(t, testPlan(uadLocation(1, 5*ms, 1, 2)), nil)
	e.hit(1, 8) // delayed 5 ms
	e.hit(2, 7)
	if got := e.clk.t.Load(); got != 5*ms || e.awaits.Load() != 0 {
		t.Fatalf("use first: clock %d, awaits %d", got, e.awaits.Load())
	}

	// Use-before-init: the partner is an init, nothing waits.
	e = newTestEngine(t, testPlan(location(1, 5*ms, 1, 2)), nil)
	e.hit(2, 7)
	if e.clk.t.Load() != 0 || e.awaits.Load() != 0 {
		t.Fatalf("use-before-init: clock %d", e.clk.t.Load())
	}

	// A pair marked no_wait: the dispose goes on at once.
	l := uadLocation(1, 5*ms, 1, 2)
	l.Pairs[0].NoWait = true
	e = newTestEngine(t, testPlan(l), nil)
	e.hit(2, 7)
	if e.clk.t.Load() != 0 || e.awaits.Load() != 0 {
		t.Fatalf("no_wait pair: clock %d, awaits %d", e.clk.t.Load(), e.awaits.Load())
	}

	// P = 0.5: the wait follows the location's draw for its instance 0.
	e = newTestEngine(t, testPlan(uadLocation(1, 5*ms, 0.5, 2)), nil)
	will := uniform(e.cfg.seed, 1, 0) < 0.5
	e.hit(2, 7)
	if waited := e.clk.t.Load() == e.params.MaxDelayNs; waited != will {
		t.Fatalf("P = 0.5: waited %v, the draw says %v", waited, will)
	}
}

// TestPartnerSideSkipped: the placement rule. A delay in progress at ℓ1
// keeps the partner's goroutine undelayed at a location on its path: one
// in ℓ1's interference set that does not list ℓ1 in turn (the thesis's
// rule skips only ℓ1, for a delay that started first at ℓ*), and the
// partner ℓ2 of a pair of ℓ1 that is itself a delay location. The skip
// record names the holding location, its delay and the goroutine it
// holds; with interference ablated both sides are delayed.
func TestPartnerSideSkipped(t *testing.T) {
	for _, off := range []bool{false, true} {
		// 1 → 2 (2 also a location, 2 → 5); 1's window lists 3 (3 → 4).
		p := testPlan(location(1, 10*ms, 1, 2), location(2, 10*ms, 1, 5), location(3, 10*ms, 1, 4))
		p.Locations[0].Interference = []uint32{3}
		p.Params.Decay = 0
		e := newTestEngine(t, p, func(c *config) {
			if off {
				c.ablate |= abi.AblateInterference
			}
		})
		// Goroutine 8 reaches 3, then 2, while goroutine 7 is delayed at 1.
		e.clk.midHook = func() {
			e.clk.midHook = nil
			e.hit(3, 8)
			e.hit(2, 8)
		}
		e.hit(1, 7)
		want := int64(0)
		if off {
			want = 1
		}
		for _, s := range []uint32{2, 3} {
			if got := e.table[s].delays.Load(); got != want {
				t.Errorf("ablate interference=%v: delays at %d during the delay at 1 = %d, want %d", off, s, got, want)
			}
		}
		// Once the delay at 1 ended, the partner's locations delay again.
		e.hit(3, 8)
		e.hit(2, 8)
		for _, s := range []uint32{2, 3} {
			if got := e.table[s].delays.Load(); got != want+1 {
				t.Errorf("ablate interference=%v: delays at %d after the delay at 1 = %d, want %d", off, s, got, want+1)
			}
		}
		// The other direction is the thesis's rule, unchanged: a delay in
		// progress at 3 skips 1 (an interference skip, not a partner one).
		e.table[3].active.Store(1)
		e.table[3].until.Store(e.clk.t.Load() + int64(time.Second))
		e.hit(1, 7)
		e.table[3].active.Store(0)
		if got := e.table[1].delays.Load(); got != 1+want {
			t.Errorf("ablate interference=%v: delays at 1 = %d, want %d", off, got, 1+want)
		}
		e.logFinish(0)
		recs := e.records(t)
		n := count(recs, abi.EvSkip, func(r map[string]any) bool {
			return r["why"] == abi.SkipPartner && r["by"] == 1.0 && r["g"] == 8.0 && r["delay_g"] == 7.0 && r["id"] == 1.0
		})
		fin := count(recs, abi.EvFinish, func(r map[string]any) bool { return r["skip_partner"] == float64(2*(1-want)) })
		if n != int(2*(1-want)) || fin != 1 {
			t.Errorf("ablate interference=%v: %d partner skip records, finish with skip_partner right: %d", off, n, fin)
		}
	}
}

// TestPartnerSidesMutual: two locations that are each other's partner
// (a check-then-act pair and its mirror) are never delayed together,
// whichever goroutine comes first; basic mode, which has no interference
// sets, delays both.
func TestPartnerSidesMutual(t *testing.T) {
	for _, first := range []uint32{1, 2} {
		p := testPlan(location(1, 10*ms, 1, 2), location(2, 10*ms, 1, 1))
		p.Params.Decay = 0
		e := newTestEngine(t, p, nil)
		other := 3 - first
		e.clk.midHook = func() {
			e.clk.midHook = nil
			e.hit(other, 8)
		}
		e.hit(first, 7)
		if e.table[first].delays.Load() != 1 || e.table[other].delays.Load() != 0 {
			t.Errorf("%d first: delays %d at %d, %d at %d", first, e.table[first].delays.Load(), first, e.table[other].delays.Load(), other)
		}
	}
	p := testPlan(location(1, 10*ms, 1, 2), location(2, 10*ms, 1, 1))
	e := newTestEngine(t, p, func(c *config) { c.ablate |= abi.AblateBasic })
	if len(e.table[1].yields) != 0 || len(e.table[2].yields) != 0 {
		t.Errorf("basic mode: yields %v, %v", e.table[1].yields, e.table[2].yields)
	}
}

// TestAwaitYieldsToAHeldGoroutine: a dispose does not wait for its late
// partner while a delay at another location is in progress (the goroutine
// disposing may be that delay's partner), and a wait in progress ends
// when such a delay starts; a delay of the awaited location itself does
// not count, nor does anything with interference ablated.
func TestAwaitYieldsToAHeldGoroutine(t *testing.T) {
	plan := func() *plans.Plan { return testPlan(uadLocation(1, 5*ms, 1, 2), uadLocation(3, 5*ms, 1, 4)) }
	e := newTestEngine(t, plan(), nil)
	e.table[3].active.Store(1)
	e.active.Store(1)
	e.hit(2, 7)
	if e.clk.t.Load() != 0 || e.awaits.Load() != 0 {
		t.Fatalf("another delay in progress: the dispose waited until %d", e.clk.t.Load())
	}

	e = newTestEngine(t, plan(), nil)
	steps := 0
	e.clk.sleepHook = func() {
		if steps++; steps == 3 {
			e.table[3].active.Store(1) // another location's delay starts
			e.active.Store(1)
		}
	}
	e.hit(2, 7)
	if got := e.clk.t.Load(); got != 3*awaitStepNs || e.awaits.Load() != 1 {
		t.Fatalf("a delay started after 3 steps: the dispose waited until %d (awaits %d)", got, e.awaits.Load())
	}

	for _, off := range []bool{false, true} {
		e = newTestEngine(t, plan(), func(c *config) {
			if off {
				c.ablate |= abi.AblateInterference
			}
		})
		e.table[1].active.Store(1) // the awaited location itself (another instance)
		e.active.Store(1)
		if !off {
			e.table[3].active.Store(0)
		} else {
			e.table[3].active.Store(1)
		}
		e.hit(2, 7)
		if got := e.clk.t.Load(); got != e.params.MaxDelayNs {
			t.Errorf("ablate interference=%v: the dispose waited until %d, want the full wait %d", off, got, e.params.MaxDelayNs)
		}
	}
}

// TestInterferenceNeedsOverlap: a delay in progress at ℓ* skips ℓ1 only
// when it still holds its goroutine at ℓ1's delayed access (within the
// slack): one that ends well before lets its goroutine — ℓ1's partner, if
// it is — reach ℓ2 first, and ℓ1 is delayed. In the other direction, a
// delay at ℓ* that would end before the delay in progress at ℓ1 (within
// the slack) is not skipped.
func TestInterferenceNeedsOverlap(t *testing.T) {
	p := testPlan(location(1, 10*ms, 1, 2), location(3, 10*ms, 1, 4))
	p.Locations[0].Interference = []uint32{3}
	p.Params.Decay = 0
	p.Params.SlackNs = 2 * ms
	e := newTestEngine(t, p, nil)
	e.clk.set(100 * ms)
	e.table[3].active.Store(1)
	// The run's delay at 1 is 10 ms + 2 ms slack: its access would come at
	// 112 ms. The delay at 3 ends at 103 ms.
	e.table[3].until.Store(103 * ms)
	e.hit(1, 7)
	if got := e.table[1].delays.Load(); got != 1 {
		t.Errorf("interfering delay ending 9 ms before the access: delays at 1 = %d, want 1", got)
	}
	e.table[3].until.Store(e.clk.t.Load() + 11*ms) // ends 1 ms before the access: within the slack
	e.hit(1, 7)
	if got := e.table[1].delays.Load(); got != 1 {
		t.Errorf("interfering delay ending within the slack: delays at 1 = %d, want 1 (skipped)", got)
	}

	// 1 in progress until now + 30 ms; 3 (in 1's window) would delay 10 ms.
	e = newTestEngine(t, p, nil)
	e.clk.set(100 * ms)
	e.table[1].active.Store(1)
	e.table[1].until.Store(130 * ms)
	e.hit(3, 8)
	if got := e.table[3].delays.Load(); got != 1 {
		t.Errorf("partner's delay ending 18 ms before the held access: delays at 3 = %d, want 1", got)
	}
	e.table[1].until.Store(e.clk.t.Load() + 13*ms) // 3's 12 ms would end 1 ms before it
	e.hit(3, 8)
	if got := e.table[3].delays.Load(); got != 1 {
		t.Errorf("partner's delay ending within the slack of the held access: delays at 3 = %d, want 1 (skipped)", got)
	}
}

// TestSelfInterferenceBothDirections: the thesis's Figure 4.2b. The
// worker is delayed at 11 (250 ms); the closing goroutine reaches 11, 80 ms
// later, right before its dispose: its delay would hold it past the
// worker's delayed use, so it is skipped (an interference skip: 11 is in
// its own set). Near the end of the worker's delay — within the slack —
// the worker's use comes now either way, and the other goroutine is
// delayed.
func TestSelfInterferenceBothDirections(t *testing.T) {
	for _, at := range []int64{80 * ms, 251 * ms} {
		l := uadLocation(11, 250*ms, 1, 12)
		l.Interference = []uint32{11}
		p := testPlan(l)
		p.Params.Decay = 0
		p.Params.SlackNs = 2 * ms
		p.Params.MaxDelayNs = 300 * ms
		e := newTestEngine(t, p, nil)
		e.clk.midHook = func() {
			e.clk.midHook = nil
			e.clk.set(at)
			e.hit(11, 8)
		}
		e.hit(11, 7)
		want := int64(1)
		if at == 251*ms {
			want = 2
		}
		if got := e.table[11].delays.Load(); got != want {
			t.Errorf("closing goroutine at %v: delays at 11 = %d, want %d", time.Duration(at), got, want)
		}
		n := count(e.records(t), abi.EvSkip, func(r map[string]any) bool { return r["why"] == abi.SkipInterference && r["by"] == 11.0 })
		if n != int(2-want) {
			t.Errorf("closing goroutine at %v: %d interference skips", time.Duration(at), n)
		}
	}
}

// A delay, its log records and a dispose that waits for a late partner do
// not allocate: they run inside the program under test, which may count
// its allocations around the code wafl delays (testing.AllocsPerRun).
func TestDelayAndAwaitNoAllocs(t *testing.T) {
	p := testPlan(location(1, 1*ms, 1, 3))
	p.Params.MaxDelayPerRunNs = 1 << 50
	p.Params.MaxDelayPerGoroutineNs = 1 << 50
	e := newTestEngine(t, p, func(c *config) { c.ablate |= abi.AblateDecay }) // every hit delays
	before := e.nDelays.Load()
	if n := testing.AllocsPerRun(100, func() { e.hit(1, 7) }); n != 0 {
		t.Errorf("a delay allocates %v times", n)
	}
	if e.nDelays.Load()-before < 100 {
		t.Fatalf("%d delays in 101 hits: the test did not measure the delay path", e.nDelays.Load()-before)
	}

	var mallocs uint64
	const tries = 20
	for range tries {
		e := newTestEngine(t, testPlan(uadLocation(1, 5*ms, 1, 2)), nil)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		e.hit(2, 7) // the dispose waits for the late use of site 1
		runtime.ReadMemStats(&m1)
		if e.awaits.Load() != 1 {
			t.Fatal("the dispose did not wait")
		}
		mallocs += m1.Mallocs - m0.Mallocs
	}
	if mallocs >= tries {
		t.Errorf("a waiting dispose allocates %d times in %d tries", mallocs, tries)
	}
}

// TestWaitingDelayHolds: the placement rule beyond the interference set.
// While the delay at 1 waits for its partner 2, a goroutine reaching
// another location (3, in no set of 1's) is not delayed — it may be on
// the partner's path through goroutines the preparation cannot tie to 2 —
// and the skip names 1. Once 2 has been reached in the delay, 1 holds
// nothing more; another instance of 1 itself is not held; with
// interference ablated, in basic mode, when 1's pair is a guess (a
// static pair, whose partner may never come in time) or a check-then-act
// pair (a check every goroutine passes), both are delayed.
func TestWaitingDelayHolds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		partner   bool   // 2 is reached before 3
		other     uint32 // the site goroutine 8 reaches
		mut       func(*config)
		wantOther int64
	}{
		{"waiting", false, 3, nil, 0},
		{"partner came", true, 3, nil, 1},
		{"same location", false, 1, nil, 2},
		{"ablated", false, 3, func(c *config) { c.ablate |= abi.AblateInterference }, 1},
		{"basic", false, 3, func(c *config) { c.ablate |= abi.AblateBasic }, 1},
		{"guessed", false, 3, nil, 1},
		{"check-then-act", false, 3, nil, 1},
	} {
		p := testPlan(uadLocation(1, 10*ms, 1, 2), uadLocation(3, 10*ms, 1, 4))
		p.Params.Decay = 0
		switch tc.name {
		case "guessed":
			p.Locations[0].Pairs[0].From = plans.FromStatic
		case "check-then-act":
			p.Locations[0].Pairs[0].Kind = plans.CheckThenAct
		}
		e := newTestEngine(t, p, tc.mut)
		e.clk.midHook = func() {
			e.clk.midHook = nil
			if tc.partner {
				e.hit(2, 9)
			}
			e.hit(tc.other, 8)
		}
		e.clk.set(5 * ms)
		e.hit(1, 7)
		if got := e.table[tc.other].delays.Load(); got != tc.wantOther {
			t.Errorf("%s: delays at %d = %d, want %d", tc.name, tc.other, got, tc.wantOther)
		}
		e.logFinish(0)
		n := count(e.records(t), abi.EvSkip, func(r map[string]any) bool {
			return r["why"] == abi.SkipPartner && r["by"] == 1.0 && r["g"] == 8.0 && r["delay_g"] == 7.0
		})
		if want := map[bool]int{true: 1, false: 0}[tc.wantOther == 0]; n != want {
			t.Errorf("%s: %d partner skip records naming 1, want %d", tc.name, n, want)
		}
	}
}

// TestAwaitShared: a dispose at the site while the first dispose waits
// for the late partner waits with it (fsnotify's hundred Remove calls,
// each deleting an entry the event reader has yet to look up), and both
// go on when the partner comes; the first wait alone is charged to the
// run's budget. Once the wait is over, a dispose does not wait.
func TestAwaitShared(t *testing.T) {
	e := newTestEngine(t, testPlan(uadLocation(1, 5*ms, 1, 2)), nil)
	steps := 0
	e.clk.sleepHook = func() {
		switch steps++; steps {
		case 2:
			e.hit(2, 8) // another goroutine disposes at the site: joins
		case 5:
			e.table[1].instances.Add(1) // the late goroutine reached site 1
		}
	}
	e.hit(2, 7)
	e.clk.sleepHook = nil
	if got := e.clk.t.Load(); got != 5*awaitStepNs || e.awaits.Load() != 2 {
		t.Fatalf("clock %d, awaits %d; want %d, 2", got, e.awaits.Load(), 5*awaitStepNs)
	}
	if e.total.Load() != 5*awaitStepNs {
		t.Errorf("budget charged %d, want the first wait's %d", e.total.Load(), 5*awaitStepNs)
	}
	e.hit(2, 9)
	if e.clk.t.Load() != 5*awaitStepNs || e.awaits.Load() != 2 {
		t.Errorf("after the wait: clock %d, awaits %d", e.clk.t.Load(), e.awaits.Load())
	}
	e.logFinish(0)
	for g, ns := range map[float64]float64{7: float64(5 * awaitStepNs), 8: float64(3 * awaitStepNs)} {
		if n := count(e.records(t), abi.EvAwait, func(r map[string]any) bool { return r["g"] == g && r["ns"] == ns }); n != 1 {
			t.Errorf("goroutine %v: %d await records of %v ns, want 1", g, n, ns)
		}
	}
}

// TestAwaitBeforeLock: a dispose guarded by a lock waits before the lock
// (hook.Before), not under it, where its partner could not get past the
// same lock; the access itself then does not wait again.
func TestAwaitBeforeLock(t *testing.T) {
	e := newTestEngine(t, testPlan(uadLocation(1, 5*ms, 1, 2)), nil)
	bound := e.params.MaxDelayNs
	e.before(e.table[2])
	if got := e.clk.t.Load(); got != bound || e.awaits.Load() != 1 {
		t.Fatalf("before the lock: clock %d, awaits %d; want %d, 1", got, e.awaits.Load(), bound)
	}
	e.hit(2, 7) // the dispose under the lock
	if got := e.clk.t.Load(); got != bound || e.awaits.Load() != 1 {
		t.Fatalf("under the lock: clock %d, awaits %d", got, e.awaits.Load())
	}
	// A goroutine disposing under the lock while another's wait before it
	// is still open does not join it under the lock either.
	e = newTestEngine(t, testPlan(uadLocation(1, 5*ms, 1, 2)), nil)
	steps := 0
	e.clk.sleepHook = func() {
		if steps++; steps == 2 {
			before := e.clk.t.Load()
			e.hit(2, 8)
			if e.clk.t.Load() != before {
				t.Errorf("a dispose under the lock waited")
			}
		}
	}
	e.before(e.table[2])
	e.clk.sleepHook = nil
	if e.awaits.Load() != 1 {
		t.Errorf("awaits %d, want 1", e.awaits.Load())
	}
}

// Delays in progress at a location count against its probability: a
// burst of goroutines that reach ℓ1 while its earlier delays still last
// gets at most the delays the decay rule gives one after another (ten at
// λ = 0.1), not one each.
func TestBurstDecays(t *testing.T) {
	for _, c := range []struct {
		name   string
		ablate abi.Ablation
		most   int64
	}{
		{"decay", abi.AblateHB, 10},
		{"decay off", abi.AblateHB | abi.AblateDecay, 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testPlan(location(1, 10*ms, 1, 2))
			p.Params.Decay = 0.1
			e := newTestEngine(t, p, func(cfg *config) { cfg.ablate |= c.ablate })
			g := uint64(7)
			e.clk.midHook = func() { // the others arrive while every delay so far lasts
				for g < 7+29 {
					g++
					e.hit(1, g)
				}
			}
			e.hit(1, 7)
			l := e.table[1]
			if got := l.delays.Load(); got > c.most || got < 2 || got+l.skipProb.Load() != 30 {
				t.Errorf("%d delays and %d probability skips of 30 goroutines arriving at once, want 2 to %d delays and the rest skipped",
					got, l.skipProb.Load(), c.most)
			}
			if c.ablate.Has(abi.AblateDecay) && l.delays.Load() != 30 {
				t.Errorf("decay off: %d delays, want 30", l.delays.Load())
			}
		})
	}
}
