package plans

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func samplePlan() *Plan {
	p := &Plan{
		Version: Version,
		Params:  DefaultParams(),
		Provenance: Provenance{
			Package: "example.com/m", Test: "TestX", Trace: "a.arrows", Events: 10,
		},
		Locations: []Location{
			{Site: 3, Prob: 1, MaxGapNs: 2e6, Interference: []uint32{3, 7},
				Pairs: []Pair{
					{Kind: UseBeforeInit, First: 3, Second: 5, Object: 0xc000, Count: 2, MinGapNs: 1e6, MaxGapNs: 2e6},
					{Kind: UseBeforeInit, First: 3, Second: 9, Object: 0xc000, Count: 1, MinGapNs: 5e5, MaxGapNs: 5e5},
				}},
			{Site: 7, Prob: 1, MaxGapNs: 50e6,
				Pairs: []Pair{{Kind: UseAfterDispose, First: 7, Second: 8, Object: 0xd000, Count: 1, MinGapNs: 50e6, MaxGapNs: 50e6}}},
		},
	}
	p.Recompute()
	return p
}

func TestParamsDelayIsAlphaTimesGapClamped(t *testing.T) {
	p := DefaultParams()
	for _, c := range []struct{ gap, want int64 }{
		{0, 1e6},           // clamped up to min
		{100e3, 1e6},       // 125 µs -> min
		{8e6, 10e6},        // 1.25 × 8 ms
		{79e6, 98_750_000}, // just under max
		{80e6, 100e6},      // exactly max
		{1e12, 100e6},      // clamped down to max
		{1 << 62, 100e6},   // no overflow
	} {
		if got := p.Delay(c.gap); got != c.want {
			t.Errorf("Delay(%d) = %d, want %d", c.gap, got, c.want)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	if err := DefaultParams().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Params){
		"near_miss_ns": func(p *Params) { p.NearMissNs = 0 },
		"alpha":        func(p *Params) { p.Alpha = 0.5 },
		"min_delay_ns": func(p *Params) { p.MinDelayNs = -1 },
		"max_delay_ns": func(p *Params) { p.MaxDelayNs = p.MinDelayNs - 1 },
		"decay":        func(p *Params) { p.Decay = 2 },
		"hb_factor":    func(p *Params) { p.HBFactor = -1 },
		"grace_ns":     func(p *Params) { p.GraceNs = -1 },
	} {
		p := DefaultParams()
		mut(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v, want an error naming %s", name, err, name)
		}
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	p := samplePlan()
	if err := Save(path, p); err != nil {
		t.Fatal(err)
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, q)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("Save left temporary files: %v", ents)
	}
}

// TestSaveInPlace: saving over a plan rewrites its file, the same one,
// with nothing left of a longer plan before it, and a prefix of a saved
// plan (a save cut short) does not load.
func TestSaveInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	long := samplePlan()
	if err := Save(path, long); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	short := samplePlan()
	short.Locations = short.Locations[:1]
	short.Recompute()
	if err := Save(path, short); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("Save made a new file over the plan; want the plan's file rewritten")
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(short, q) {
		t.Fatalf("saved over a longer plan, loaded:\n%+v\nwant\n%+v", q, short)
	}
	data, _ := short.Marshal()
	for _, n := range []int{0, 1, len(data) / 2, len(data) - 2} {
		if err := os.WriteFile(path, data[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil {
			t.Errorf("a plan cut after %d of %d bytes loaded; want an error", n, len(data))
		}
	}
}

func TestSaveRefusesInvalidPlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	p := samplePlan()
	p.Locations[0].Prob = 2
	if err := Save(path, p); err == nil {
		t.Fatal("Save accepted prob 2")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("invalid plan written: %v", err)
	}
}

func TestParseErrorsNameTheCause(t *testing.T) {
	good, _ := samplePlan().Marshal()
	for name, c := range map[string]struct{ in, want string }{
		"syntax":   {"{\n\"version\": 1,\n,}", "p.json: line 3"},
		"type":     {`{"version": "one"}`, "p.json"},
		"version":  {`{"version": 99}`, "version 99"},
		"trailing": {string(good) + "{}", "trailing data"},
		"unsorted": {strings.Replace(string(good), `"site": 7`, `"site": 2`, 1), "sorted by site"},
		"first":    {strings.Replace(string(good), `"first": 7`, `"first": 6`, 1), "want the location's site 7"},
		"kind":     {strings.Replace(string(good), `"use-after-dispose"`, `"use-before-dinner"`, 1), `unknown kind "use-before-dinner"`},
	} {
		_, err := Parse([]byte(c.in), "p.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, c.want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// live returns the sites of the locations still in S.
func live(p *Plan) []uint32 {
	var out []uint32
	for _, l := range p.Locations {
		if l.Live() {
			out = append(out, l.Site)
		}
	}
	return out
}

func TestLiveEmptyPruneDecay(t *testing.T) {
	p := samplePlan()
	if p.Empty() || len(live(p)) != 2 {
		t.Fatalf("fresh plan: Empty=%v live=%d", p.Empty(), len(live(p)))
	}
	if n := p.PrunePair(7, 8, PrunedHB); n != 1 {
		t.Fatalf("PrunePair(7,8) = %d, want 1", n)
	}
	if n := p.PrunePair(7, 8, PrunedHB); n != 0 {
		t.Fatalf("second PrunePair(7,8) = %d, want 0", n)
	}
	if a := live(p); len(a) != 1 || a[0] != 3 {
		t.Fatalf("after pruning 7's only pair: live = %v", a)
	}
	for i := 0; i < 10; i++ {
		p.Decay(3, 0.1)
	}
	if got := p.Location(3).Prob; got != 0 {
		t.Fatalf("10 decays of 0.1: prob %v, want exactly 0", got)
	}
	if !p.Empty() {
		t.Fatal("plan with every location dead is not Empty")
	}
	if p.Decay(42, 0.1) != 0 || p.PrunePair(42, 1, PrunedHB) != 0 {
		t.Fatal("unknown site changed something")
	}
}

func TestAddBugPrunesItsPairs(t *testing.T) {
	p := samplePlan()
	if !p.AddBug(Bug{Kind: UseBeforeInit, Delayed: 3, Failing: 9, Run: 1}) {
		t.Fatal("AddBug returned false for a new bug")
	}
	l := p.Location(3)
	if l.Pairs[0].Pruned != "" || l.Pairs[1].Pruned != PrunedBug {
		t.Fatalf("exact pair not pruned alone: %+v", l.Pairs)
	}
	if p.AddBug(Bug{Kind: UseBeforeInit, Delayed: 3, Failing: 9, Run: 2}) {
		t.Fatal("duplicate bug recorded")
	}
	// The delayed use itself failed: every use-after-dispose pair of 7 goes.
	p.AddBug(Bug{Kind: UseAfterDispose, Delayed: 7, Failing: 7})
	if p.Location(7).Pairs[0].Pruned != PrunedBug {
		t.Fatal("use-after-dispose pair of the failing delayed use not pruned")
	}
	if len(p.Bugs) != 2 {
		t.Fatalf("bugs: %v", p.Bugs)
	}
}

func TestDecayed(t *testing.T) {
	for _, c := range []struct{ prob, lambda, want float64 }{
		{1, 0.1, 0.9},
		{0.05, 0.1, 0},        // not below 0
		{0.1 + 1e-10, 0.1, 0}, // within 1e-9 of 0 is 0
		{0.5, 0, 0.5},
		{0.95, -0.1, 1}, // not above 1
	} {
		if got := Decayed(c.prob, c.lambda); got != c.want {
			t.Errorf("Decayed(%v, %v) = %v, want %v", c.prob, c.lambda, got, c.want)
		}
	}
}

// TestApplyRun: delays count at their location; ended delays that exposed
// nothing decay it; HB prunes, the run and the bug are recorded.
func TestApplyRun(t *testing.T) {
	p := samplePlan()
	bug := &Bug{Kind: UseAfterDispose, Delayed: 7, Failing: 8, Run: 4, Seed: 9, Panic: "send on closed channel"}
	p.ApplyRun(RunOutcome{
		Run: Run{N: 4, Seed: 9, Delays: 4, Outcome: "bug"},
		Delays: []RunDelay{
			{Site: 3, Ended: true},
			{Site: 3},                             // cut short by the crash
			{Site: 7, Ended: true, Exposed: true}, // exposed the bug
			{Site: 42, Ended: true},               // not in the plan
		},
		Pruned: []PairID{{First: 3, Second: 5}},
		Bug:    bug,
	})
	l3, l7 := p.Location(3), p.Location(7)
	if l3.Delays != 2 || l3.Prob != 0.9 || l7.Delays != 1 || l7.Prob != 1 {
		t.Errorf("site 3: delays %d prob %v; site 7: delays %d prob %v; want 2 0.9, 1 1",
			l3.Delays, l3.Prob, l7.Delays, l7.Prob)
	}
	if l3.Pairs[0].Pruned != PrunedHB || l3.Pairs[1].Pruned != "" {
		t.Errorf("HB prune of 3→5: %+v", l3.Pairs)
	}
	if l7.Pairs[0].Pruned != PrunedBug || len(p.Bugs) != 1 || p.Bugs[0] != *bug {
		t.Errorf("bug: %+v, pair %+v", p.Bugs, l7.Pairs[0])
	}
	if len(p.Runs) != 1 || p.Runs[0].N != 4 || p.Runs[0].Outcome != "bug" {
		t.Errorf("runs: %+v", p.Runs)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("plan after ApplyRun: %v", err)
	}

	// A run with decay switched off lowers no probability.
	p = samplePlan()
	p.ApplyRun(RunOutcome{Delays: []RunDelay{{Site: 3, Ended: true}}, NoDecay: true})
	if l := p.Location(3); l.Prob != 1 || l.Delays != 1 {
		t.Errorf("decay off: prob %v delays %d, want 1 1", l.Prob, l.Delays)
	}
}

// TestOverrides: a zero field keeps the value it would replace; an
// existing plan takes only the detection-run parameters.
func TestOverrides(t *testing.T) {
	if p := (Overrides{}).NewParams(); p != DefaultParams() {
		t.Errorf("no overrides: %+v, want the defaults", p)
	}
	o := Overrides{NearMiss: 50 * time.Millisecond, Alpha: 2, Decay: 0.5, MaxDelayPerRun: 2 * time.Second}
	want := DefaultParams()
	want.NearMissNs, want.Alpha, want.Decay, want.MaxDelayPerRunNs = int64(50*time.Millisecond), 2, 0.5, int64(2*time.Second)
	if p := o.NewParams(); p != want {
		t.Errorf("NewParams = %+v, want %+v", p, want)
	}
	p := DefaultParams()
	want = p
	(Overrides{}).ApplyDetection(&p)
	if p != want {
		t.Errorf("empty overrides changed params: %+v", p)
	}
	o.ApplyDetection(&p)
	want.Decay, want.MaxDelayPerRunNs = 0.5, int64(2*time.Second)
	if p != want {
		t.Errorf("ApplyDetection = %+v, want %+v (analysis parameters kept)", p, want)
	}
}

func TestMergeUnionsPairsAndRecomputesDelays(t *testing.T) {
	a := samplePlan()
	b := samplePlan()
	b.Provenance.Trace = "b.arrows"
	b.Locations[0].Pairs[0].MaxGapNs = 40e6
	b.Locations[0].Pairs[0].MinGapNs = 1
	b.Locations[0].Interference = []uint32{4}
	b.Locations[1].Pairs[0].Pruned = PrunedHB
	b.Locations = append(b.Locations, Location{Site: 11, Prob: 1,
		Pairs: []Pair{{Kind: UseAfterDispose, First: 11, Second: 8, Count: 1}}})
	b.Recompute()
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	l3 := m.Location(3)
	if pr := l3.Pairs[0]; pr.Count != 4 || pr.MinGapNs != 1 || pr.MaxGapNs != 40e6 {
		t.Errorf("merged pair: %+v", pr)
	}
	if l3.MaxGapNs != 40e6 || l3.DelayNs != 50e6 {
		t.Errorf("merged location gap %d delay %d, want 40ms, 50ms", l3.MaxGapNs, l3.DelayNs)
	}
	if !reflect.DeepEqual(l3.Interference, []uint32{3, 4, 7}) {
		t.Errorf("merged interference %v", l3.Interference)
	}
	if m.Location(7).Pairs[0].Pruned != PrunedHB {
		t.Error("pruned pair came back to life")
	}
	if m.Location(11) == nil || m.Provenance.Events != 20 || !reflect.DeepEqual(m.Provenance.Merged, []string{"b.arrows"}) {
		t.Errorf("merged plan: %+v", m)
	}
	if a.Locations[0].Pairs[0].Count != 2 {
		t.Error("Merge modified its input")
	}
	b.Provenance.Test = "TestY"
	if _, err := Merge(a, b); err == nil || !strings.Contains(err.Error(), "TestY") {
		t.Errorf("merge of different tests: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	good, _ := samplePlan().Marshal()
	f.Add(good)
	f.Add([]byte(`{"version":1,"params":{}}`))
	f.Add([]byte(`{"version":1,"locations":[{"site":1,"prob":1,"pairs":[{"kind":"use-before-init","first":1,"second":2,"count":1}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.json")
		if err != nil {
			return
		}
		// A valid plan survives the helpers and a round trip.
		p.Empty()
		p.Recompute()
		for _, l := range p.Locations {
			p.Decay(l.Site, p.Params.Decay)
			p.PrunePair(l.Site, 1, PrunedHB)
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(out, "round-trip")
		if err != nil {
			t.Fatalf("re-parse of a marshalled valid plan: %v", err)
		}
		if _, err := Merge(p, q); err != nil {
			t.Fatal(err)
		}
	})
}

// TestApplyRunGrowsLateDelays: a partner that came right after a delay
// ended grows the location's delay (bounded by MaxDelayNs) instead of
// decaying it, and counts the growth; at the bound it decays.
func TestApplyRunGrowsLateDelays(t *testing.T) {
	p := samplePlan()
	l := p.Location(3)
	d0, p0 := l.DelayNs, l.Prob
	p.ApplyRun(RunOutcome{
		Delays: []RunDelay{{Site: 3, Ended: true}},
		Late:   []Late{{First: 3, Second: 5, NeedNs: 2 * d0}},
	})
	l = p.Location(3)
	if want := int64(p.Params.Alpha * float64(2*d0)); l.DelayNs != want || l.Grown != 1 || l.Prob != p0 {
		t.Errorf("delay %d grown %d prob %v; want %d, 1, %v (no decay)", l.DelayNs, l.Grown, l.Prob, want, p0)
	}
	// Bounded: a huge need stops at MaxDelayNs and still counts.
	p.ApplyRun(RunOutcome{Late: []Late{{First: 3, Second: 5, NeedNs: 10 * p.Params.MaxDelayNs}}})
	if l = p.Location(3); l.DelayNs != p.Params.MaxDelayNs || l.Grown != 2 {
		t.Errorf("delay %d grown %d; want the bound %d, 2", l.DelayNs, l.Grown, p.Params.MaxDelayNs)
	}
	p.ApplyRun(RunOutcome{Late: []Late{{First: 3, Second: 5, NeedNs: 1}}})
	if l = p.Location(3); l.DelayNs != p.Params.MaxDelayNs || l.Grown != 3 {
		t.Errorf("delay %d grown %d at the bound", l.DelayNs, l.Grown)
	}
	// At the bound a late partner no longer spares the delay its decay:
	// the next run could only repeat it.
	p1 := l.Prob
	p.ApplyRun(RunOutcome{
		Delays: []RunDelay{{Site: 3, Ended: true}},
		Late:   []Late{{First: 3, Second: 5, NeedNs: p.Params.MaxDelayNs}},
	})
	if l = p.Location(3); l.Prob != Decayed(p1, p.Params.Decay) || l.Grown != 4 {
		t.Errorf("at the bound: prob %v grown %d; want %v (decayed), 4", l.Prob, l.Grown, Decayed(p1, p.Params.Decay))
	}
}

// TestApplyRunPrunesFollowers: a partner that comes right after the end of
// a delay (Late.Follows) grows the delay the first time; when it follows
// the end of the grown delay too, the pair is pruned (PrunedFollows) and
// the location leaves S once no pair is left. A partner that came later
// after the end, or after a delay too short to tell, only grows it.
func TestApplyRunPrunesFollowers(t *testing.T) {
	p := samplePlan()
	l := p.Location(7)
	d0 := l.DelayNs // 62.5 ms
	follow := func(d int64) Late { return Late{First: 7, Second: 8, NeedNs: d + 300e3, DelayNs: d} }
	p.ApplyRun(RunOutcome{Delays: []RunDelay{{Site: 7, Ended: true}}, Late: []Late{follow(d0)}})
	if l = p.Location(7); l.Grown != 1 || l.Pairs[0].Pruned != "" || l.Pairs[0].Follows != 1 || !l.Live() {
		t.Fatalf("after one run the partner followed: grown %d pruned %q follows %d live %v; want 1, unpruned, 1, live",
			l.Grown, l.Pairs[0].Pruned, l.Pairs[0].Follows, l.Live())
	}
	p.ApplyRun(RunOutcome{Delays: []RunDelay{{Site: 7, Ended: true}}, Late: []Late{follow(l.DelayNs)}})
	if l = p.Location(7); l.Pairs[0].Pruned != PrunedFollows || l.Live() || l.Grown != 1 {
		t.Errorf("after the partner followed a grown delay: pruned %q live %v grown %d; want %q, not live, 1",
			l.Pairs[0].Pruned, l.Live(), l.Grown, PrunedFollows)
	}

	for _, lt := range []Late{
		{First: 3, Second: 5, NeedNs: 30e6, DelayNs: 20e6}, // 10 ms after a 20 ms delay: came later
		{First: 3, Second: 5, NeedNs: 4.2e6, DelayNs: 4e6}, // a 4 ms delay is too short to tell
		{First: 3, Second: 5, NeedNs: 20.5e6, DelayNs: 0},  // length not known (older log)
	} {
		q := samplePlan()
		for range 3 {
			q.ApplyRun(RunOutcome{Late: []Late{lt}})
		}
		if l := q.Location(3); l.Pairs[0].Pruned != "" || l.Grown != 3 {
			t.Errorf("late %+v three times: pruned %q grown %d; want unpruned, grown 3", lt, l.Pairs[0].Pruned, l.Grown)
		}
	}
}

// TestApplyRunNoWait: a dispose that waited for ℓ1 in vain marks the pair
// no_wait when ℓ1 was then not reached at all, or first by the goroutine
// that waited (program order); not when ℓ1 came during the wait, or first
// from another goroutine after it (a late partner the wait was too short
// for), or when the run logged no instance of a location it reached.
func TestApplyRunNoWait(t *testing.T) {
	wait := []Wait{{Site: 8, G: 5, End: 200e6}}
	for _, c := range []struct {
		name      string
		first     map[uint32]Instance
		unreached []uint32
		want      bool
	}{
		{"never reached", nil, []uint32{7}, true},
		{"then by the waiter", map[uint32]Instance{7: {G: 5, T: 201e6}}, nil, true},
		{"during the wait", map[uint32]Instance{7: {G: 5, T: 150e6}}, nil, false},
		{"then by another goroutine", map[uint32]Instance{7: {G: 6, T: 230e6}}, nil, false},
		{"reached, not logged", nil, nil, false},
	} {
		p := samplePlan()
		p.ApplyRun(RunOutcome{Waits: wait, First: c.first, Unreached: c.unreached})
		l := p.Location(7)
		if got := l.Pairs[0].NoWait; got != c.want {
			t.Errorf("%s: no_wait %v, want %v", c.name, got, c.want)
		}
		if !l.Live() {
			t.Errorf("%s: the location left S; only the wait should stop", c.name)
		}
	}
}
