package plans

import "testing"

func TestAddTrap(t *testing.T) {
	p := &Plan{Version: Version, Params: DefaultParams()}
	ms := int64(1e6)
	if !p.AddTrap(Trap{Kind: UseBeforeInit, First: 30, Second: 40, Object: 0x10, GapNs: 8 * ms}) {
		t.Fatal("first trap not new")
	}
	if !p.AddTrap(Trap{Kind: UseAfterDispose, First: 10, Second: 20, GapNs: 2 * ms}) {
		t.Fatal("second trap not new")
	}
	if p.AddTrap(Trap{Kind: UseBeforeInit, First: 30, Second: 40, GapNs: 12 * ms}) {
		t.Fatal("a known pair reported new")
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("plan after AddTrap: %v", err)
	}
	l := p.Location(30)
	if l == nil || len(l.Pairs) != 1 || l.Pairs[0].Count != 2 || l.Pairs[0].MinGapNs != 8*ms || l.Pairs[0].MaxGapNs != 12*ms {
		t.Fatalf("location 30 = %+v", l)
	}
	if l.Prob != 1 || l.DelayNs != p.Params.Delay(12*ms) {
		t.Errorf("location 30: prob %v delay %d, want 1, %d", l.Prob, l.DelayNs, p.Params.Delay(12*ms))
	}
	// Decay takes the location out; a new pair brings it back, a known
	// pruned one does not.
	l.Prob = 0
	l.Pairs[0].Pruned = PrunedHB
	p.AddTrap(Trap{Kind: UseBeforeInit, First: 30, Second: 40, GapNs: ms})
	if l := p.Location(30); l.Prob != 0 || l.Pairs[0].Pruned != PrunedHB {
		t.Errorf("a known pair revived its location: %+v", l)
	}
	p.AddTrap(Trap{Kind: UseBeforeInit, First: 30, Second: 35, GapNs: ms})
	if l := p.Location(30); l.Prob != 1 || len(l.Pairs) != 2 || l.Pairs[0].Second != 35 {
		t.Errorf("a new pair: %+v", l)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestApplyRunTraps: a basic-mode run's traps join the plan before its
// delays count, so a delay at a pair found in the same run is counted.
func TestApplyRunTraps(t *testing.T) {
	p := &Plan{Version: Version, Params: DefaultParams(), Provenance: Provenance{Basic: true}}
	if !p.Empty() {
		t.Fatal("new basic plan not empty")
	}
	p.ApplyRun(RunOutcome{
		Run:    Run{N: 1, Outcome: "pass", Delays: 1},
		Traps:  []Trap{{Kind: UseBeforeInit, First: 7, Second: 9, GapNs: 3e6}},
		Delays: []RunDelay{{Site: 7, Ended: true}},
	})
	l := p.Location(7)
	if l == nil || l.Delays != 1 || l.Prob != 1-p.Params.Decay {
		t.Fatalf("location 7 = %+v", l)
	}
	if p.Empty() {
		t.Error("plan with a live trap is empty")
	}
	c := p.Clone()
	c.Locations[0].Pairs[0].Count = 99
	if p.Locations[0].Pairs[0].Count == 99 {
		t.Error("Clone shares pairs")
	}
}
