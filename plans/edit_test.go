package plans

import (
	"slices"
	"testing"
)

// TestNew: one location per ℓ1 at probability 1, pairs sorted by (second,
// kind), delays from the parameters; the input is left alone.
func TestNew(t *testing.T) {
	pairs := []Pair{
		{Kind: UseBeforeInit, First: 9, Second: 4, Count: 1, MinGapNs: 1e6, MaxGapNs: 3e6},
		{Kind: UseAfterDispose, First: 2, Second: 7, Count: 2, MinGapNs: 1e6, MaxGapNs: 1e6},
		{Kind: CheckThenAct, First: 2, Second: 5, Count: 1, MinGapNs: 2e6, MaxGapNs: 2e6},
		{Kind: UseAfterDispose, First: 2, Second: 5, Count: 1, MinGapNs: 4e6, MaxGapNs: 4e6, From: FromPredicted},
	}
	in := slices.Clone(pairs)
	prov := Provenance{Package: "example.com/m", Test: "TestX"}
	p := New(DefaultParams(), prov, pairs)
	if err := p.Validate(); err != nil {
		t.Fatalf("invalid: %v\n%s", err, p)
	}
	if !slices.Equal(pairs, in) {
		t.Errorf("New changed its input")
	}
	if p.Provenance.Test != "TestX" || p.Version != Version {
		t.Errorf("provenance %+v, version %d", p.Provenance, p.Version)
	}
	if len(p.Locations) != 2 || p.Locations[0].Site != 2 || p.Locations[1].Site != 9 {
		t.Fatalf("locations %+v", p.Locations)
	}
	l := p.Locations[0]
	if l.Prob != 1 || len(l.Pairs) != 3 || l.Pairs[0].Kind != CheckThenAct || l.Pairs[1].Kind != UseAfterDispose || l.Pairs[2].Second != 7 {
		t.Errorf("location 2: %+v", l)
	}
	if l.MaxGapNs != 4e6 || l.DelayNs != p.Params.Delay(4e6) {
		t.Errorf("location 2: gap %d, delay %d", l.MaxGapNs, l.DelayNs)
	}
	if e := New(DefaultParams(), prov, nil); len(e.Locations) != 0 || e.Validate() != nil {
		t.Errorf("plan of no pairs: %+v", e)
	}
}

func TestSetInterference(t *testing.T) {
	p := samplePlan()
	p.SetInterference(7, []uint32{9, 3, 9})
	if got := p.Location(7).Interference; !slices.Equal(got, []uint32{3, 9}) {
		t.Errorf("interference %v, want [3 9]", got)
	}
	p.SetInterference(3, nil)
	if got := p.Location(3).Interference; got != nil {
		t.Errorf("interference %v, want none", got)
	}
	p.SetInterference(100, []uint32{1}) // no such location: nothing happens
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
}

func TestProvenanceSetters(t *testing.T) {
	p := samplePlan()
	p.SetBuild("/b/x.test", "/b/sites.json", "sha256:ab")
	p.SetForks(3)
	if pv := p.Provenance; pv.Binary != "/b/x.test" || pv.Sites != "/b/sites.json" || pv.BinaryHash != "sha256:ab" || pv.Forks == nil || *pv.Forks != 3 {
		t.Errorf("provenance %+v", pv)
	}
	p.MovePaths(func(s string) string { return "/moved" + s })
	if pv := p.Provenance; pv.Binary != "/moved/b/x.test" || pv.Sites != "/moved/b/sites.json" || pv.Trace != "/moveda.arrows" {
		t.Errorf("moved provenance %+v", pv)
	}
}

// TestForRun: the run's copy carries the slack and stretch of the load;
// the plan keeps its own parameters.
func TestForRun(t *testing.T) {
	p := samplePlan()
	r := p.ForRun(3, false)
	if r.Params.SlackNs != RunSlack(3, false) || r.Params.Stretch != RunStretch(3, false) {
		t.Errorf("run params %+v", r.Params)
	}
	if p.Params.SlackNs != 0 || p.Params.Stretch != 0 {
		t.Errorf("the plan's params changed: %+v", p.Params)
	}
	if n := p.ForRun(3, true); n.Params.Stretch != 1 || n.Params.SlackNs != DefaultSlackNs {
		t.Errorf("unscaled run params %+v", n.Params)
	}
	// The caps stretch with the delays; the plan keeps its own.
	p.Params.MaxDelayPerRunNs, p.Params.MaxDelayPerGoroutineNs = 4e9, 1e9
	r = p.ForRun(3, false)
	if f := RunStretch(3, false); r.Params.MaxDelayPerRunNs != int64(4e9*f) || r.Params.MaxDelayPerGoroutineNs != int64(1e9*f) {
		t.Errorf("run caps %+v, want the plan's × %g", r.Params, f)
	}
	if p.Params.MaxDelayPerRunNs != 4e9 || p.ForRun(1, false).Params.MaxDelayPerRunNs != 4e9 || p.ForRun(3, true).Params.MaxDelayPerRunNs != 4e9 {
		t.Errorf("caps changed at rest or in the plan: %+v", p.Params)
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
}

func TestSiteIDs(t *testing.T) {
	p := samplePlan()
	p.Bugs = []Bug{{Kind: UseBeforeInit, Delayed: 3, Failing: 12}, {Kind: UseAfterDispose, Delayed: 7}}
	if got, want := p.SiteIDs(), []uint32{3, 5, 7, 8, 9, 12}; !slices.Equal(got, want) {
		t.Errorf("SiteIDs = %v, want %v", got, want)
	}
}

// TestRemap: sites are renamed, what the map lacks is dropped, and the
// result is sorted and valid.
func TestRemap(t *testing.T) {
	p := samplePlan()
	p.Bugs = []Bug{{Kind: UseBeforeInit, Delayed: 3, Failing: 5}, {Kind: UseAfterDispose, Delayed: 8, Failing: 7}}
	// 3 → 30 (with partner 5 → 50; 9 gone), 7 → 2 (partner 8 gone).
	p.Remap(map[uint32]uint32{3: 30, 5: 50, 7: 2})
	if err := p.Validate(); err != nil {
		t.Fatalf("invalid after Remap: %v\n%+v", err, p.Locations)
	}
	if len(p.Locations) != 1 {
		t.Fatalf("locations %+v", p.Locations)
	}
	l := p.Locations[0]
	if l.Site != 30 || len(l.Pairs) != 1 || l.Pairs[0].First != 30 || l.Pairs[0].Second != 50 || !slices.Equal(l.Interference, []uint32{2, 30}) {
		t.Errorf("location %+v", l)
	}
	if len(p.Bugs) != 1 || p.Bugs[0].Delayed != 30 || p.Bugs[0].Failing != 50 {
		t.Errorf("bugs %+v", p.Bugs)
	}
}
