package plans

import "testing"

// TestAddNew: only pairs the plan lacks are added; what the plan has keeps
// its state; a location that had left S comes back for a new pair; the
// bound holds; the result validates.
func TestAddNew(t *testing.T) {
	pair := func(first, second uint32, kind Kind, gap int64) Pair {
		return Pair{Kind: kind, First: first, Second: second, Count: 1, MinGapNs: gap, MaxGapNs: gap}
	}
	p := &Plan{Version: Version, Params: DefaultParams(), Locations: []Location{
		{Site: 10, DelayNs: 7e6, Prob: 0.4, Grown: 1, Pairs: []Pair{pair(10, 11, UseBeforeInit, 5e6)}},
		{Site: 20, DelayNs: 3e6, Prob: 0, Pairs: []Pair{{Kind: UseAfterDispose, First: 20, Second: 21, Count: 1, Pruned: "hb-inference"}}},
	}}
	fresh := &Plan{Version: Version, Params: DefaultParams(), Locations: []Location{
		{Site: 5, DelayNs: 2e6, Prob: 1, Pairs: []Pair{pair(5, 6, CheckThenAct, 1e6), pair(5, 7, CheckThenAct, 1e6)}},
		{Site: 10, DelayNs: 9e6, Prob: 1, Pairs: []Pair{pair(10, 11, UseBeforeInit, 8e6), pair(10, 4, UseAfterDispose, 1e6)}},
		{Site: 20, DelayNs: 1e6, Prob: 1, Pairs: []Pair{pair(20, 22, UseAfterDispose, 1e6)}},
	}}
	for i := range fresh.Locations {
		for k := range fresh.Locations[i].Pairs {
			fresh.Locations[i].Pairs[k].From = FromDetect
		}
	}
	if n := p.AddNew(fresh, 0); n != 4 {
		t.Fatalf("added %d pairs, want 4", n)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("invalid after AddNew: %v\n%s", err, p)
	}
	if len(p.Locations) != 3 || p.Locations[0].Site != 5 {
		t.Fatalf("locations %+v", p.Locations)
	}
	l10 := p.Location(10)
	if l10.DelayNs != 7e6 || l10.Prob != 0.4 || l10.Grown != 1 || len(l10.Pairs) != 2 {
		t.Errorf("location 10 changed: %+v", l10)
	}
	for _, pr := range l10.Pairs {
		if pr.Second == 11 && (pr.MaxGapNs != 5e6 || pr.From != "") {
			t.Errorf("existing pair changed: %+v", pr)
		}
		if pr.Second == 4 && pr.From != FromDetect {
			t.Errorf("new pair not marked: %+v", pr)
		}
	}
	l20 := p.Location(20)
	if l20.Prob != 1 || !l20.Live() || l20.Pairs[0].Pruned != "hb-inference" {
		t.Errorf("location 20: %+v", l20)
	}
	// Everything is there now: nothing more to add.
	if n := p.AddNew(fresh, 0); n != 0 {
		t.Errorf("second AddNew added %d", n)
	}
	q := &Plan{Version: Version, Params: DefaultParams()}
	if n := q.AddNew(fresh, 3); n != 3 {
		t.Errorf("bounded AddNew added %d, want 3", n)
	}
	if err := q.Validate(); err != nil {
		t.Errorf("invalid after bounded AddNew: %v", err)
	}
}

func TestMarkFrom(t *testing.T) {
	p := samplePlan()
	p.Locations[0].Pairs[1].From = FromPredicted
	p.MarkFrom(FromLearn)
	for _, l := range p.Locations {
		for _, pr := range l.Pairs {
			want := FromLearn
			if pr.First == 3 && pr.Second == 9 {
				want = FromPredicted
			}
			if pr.From != want {
				t.Errorf("pair %d→%d from %q, want %q", pr.First, pr.Second, pr.From, want)
			}
		}
	}
}

// TestMergeLearned: a plan without candidates takes a learning run's
// pairs, marked, and its analysis parameters, and keeps its own history.
func TestMergeLearned(t *testing.T) {
	p := &Plan{Version: Version, Params: DefaultParams(), Provenance: Provenance{Package: "example.com/m", Test: "TestX", Trace: "prep.arrows"},
		Runs: []Run{{N: 1, Outcome: "pass"}}}
	p.CountLearnRun()
	fresh := samplePlan()
	fresh.Params.NearMissNs, fresh.Params.MaxDelayNs, fresh.Params.LoadFactor = 2e8, 2e8, 2
	m, k, err := MergeLearned(p, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if k != 3 || m.Provenance.LearnedCandidates != 3 || m.Provenance.Learned != 1 {
		t.Errorf("added %d, provenance %+v", k, m.Provenance)
	}
	if m.Params.NearMissNs != 2e8 || m.Params.MaxDelayNs != 2e8 || m.Params.LoadFactor != 2 || m.Params.Alpha != p.Params.Alpha {
		t.Errorf("params %+v", m.Params)
	}
	if len(m.Runs) != 1 || m.Provenance.Trace != "prep.arrows" {
		t.Errorf("history lost: runs %v, provenance %+v", m.Runs, m.Provenance)
	}
	for _, l := range m.Locations {
		for _, pr := range l.Pairs {
			if pr.From != FromLearn {
				t.Errorf("pair %d→%d from %q", pr.First, pr.Second, pr.From)
			}
		}
	}
	if p.Params.NearMissNs != DefaultNearMissNs || fresh.Locations[0].Pairs[0].From != "" {
		t.Errorf("inputs changed")
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
	if _, _, err := MergeLearned(m, fresh); err == nil {
		t.Errorf("merging into a plan with candidates succeeded")
	}
}

// TestAddDetected: a recording detection run counts; its new pairs join,
// marked and counted.
func TestAddDetected(t *testing.T) {
	p := samplePlan()
	p.CountDetectRecord()
	fresh := samplePlan()
	fresh.Locations[1].Pairs = append(fresh.Locations[1].Pairs, Pair{Kind: UseAfterDispose, First: 7, Second: 11, Count: 1})
	if n := p.AddDetected(fresh); n != 1 {
		t.Fatalf("added %d, want 1", n)
	}
	if p.Provenance.DetectRecorded != 1 || p.Provenance.DetectCandidates != 1 {
		t.Errorf("provenance %+v", p.Provenance)
	}
	if l := p.Location(7); len(l.Pairs) != 2 || l.Pairs[1].From != FromDetect || l.Pairs[0].From != "" {
		t.Errorf("location 7: %+v", l.Pairs)
	}
	// A static pair the first analysis left out by its cap comes in:
	// one fewer left, and it keeps its mark.
	p.SetStaticLeft(3)
	fresh = samplePlan()
	fresh.Locations[1].Pairs = append(fresh.Locations[1].Pairs, Pair{Kind: UseAfterDispose, First: 7, Second: 12, Count: 1, From: FromStatic})
	if n := p.AddDetected(fresh); n != 1 || p.Provenance.StaticLeft != 2 {
		t.Fatalf("added %d, static left %d; want 1, 2", n, p.Provenance.StaticLeft)
	}
	if l := p.Location(7); l.Pairs[len(l.Pairs)-1].From != FromStatic {
		t.Errorf("location 7: %+v", l.Pairs)
	}
}

// TestAwaitInVainDecaysGuessedPair: a dispose that waited for the
// goroutine of a static pair that never came decays that pair's location
// (it is never delayed, so no delay would); a pair the trace saw, or a
// location delayed in the run, is left to the ordinary rule.
func TestAwaitInVainDecaysGuessedPair(t *testing.T) {
	p := samplePlan()
	p.Locations[1].Pairs[0].From = FromStatic // 7 → 8
	p.ApplyRun(RunOutcome{Waits: []Wait{{Site: 8}, {Site: 5}}})
	if got, want := p.Location(7).Prob, Decayed(1, p.Params.Decay); got != want {
		t.Errorf("static location after an await in vain: P %v, want %v", got, want)
	}
	if p.Location(3).Prob != 1 {
		t.Errorf("a location of trace pairs decayed: %v", p.Location(3).Prob)
	}
	// Delayed in the run: its goroutine came; one decay, the delay's.
	q := samplePlan()
	q.Locations[1].Pairs[0].From = FromStatic
	q.ApplyRun(RunOutcome{Waits: []Wait{{Site: 8}}, Delays: []RunDelay{{Site: 7, Ended: true}}})
	if got, want := q.Location(7).Prob, Decayed(1, q.Params.Decay); got != want {
		t.Errorf("delayed static location: P %v, want %v", got, want)
	}
	// Without decay (ablation) nothing changes.
	r := samplePlan()
	r.Locations[1].Pairs[0].From = FromPredicted
	r.ApplyRun(RunOutcome{Waits: []Wait{{Site: 8}}, NoDecay: true})
	if r.Location(7).Prob != 1 {
		t.Errorf("decay ablated: P %v", r.Location(7).Prob)
	}
}
