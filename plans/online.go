package plans

import (
	"cmp"
	"slices"
)

// Basic mode (--ablate basic, the thesis's WAFLBASIC, §3 and Table 6.4
// "no preparation run"): no preparation run makes the plan; detection
// runs find candidate pairs online, TSVD-style, inject delays at them in
// the same run, and log each pair they add to the trap set. The wafl
// process folds those pairs into the plan after the run (ApplyRun), so the
// plan is TSVD's trap file: the next run starts with every pair the
// earlier runs found.

// Trap is a candidate pair a basic-mode detection run found online: a
// near miss of First (init, or use) and Second (use, or dispose) on one
// object by two goroutines GapNs apart.
type Trap struct {
	Kind          Kind
	First, Second uint32
	Object        uint64
	GapNs         int64
}

// AddTrap adds the pair of t to S and reports whether it was new. A new
// location starts at probability 1; a new pair of a known location sets
// its probability back to 1 (TSVD §3.4.1: P = 1 when a dangerous pair is
// added). A known pair counts one more instance and widens its gaps; a
// pruned pair stays pruned. The location's delay becomes Params.Delay of
// its largest gap when that is longer than the delay it has.
func (p *Plan) AddTrap(t Trap) bool {
	i, found := slices.BinarySearchFunc(p.Locations, t.First, func(l Location, s uint32) int {
		return cmp.Compare(l.Site, s)
	})
	if !found {
		p.Locations = slices.Insert(p.Locations, i, Location{Site: t.First, Prob: 1})
	}
	l := &p.Locations[i]
	gap := max(t.GapNs, 0)
	want := Pair{Kind: t.Kind, First: t.First, Second: t.Second, Object: t.Object, Count: 1, MinGapNs: gap, MaxGapNs: gap}
	j, known := slices.BinarySearchFunc(l.Pairs, want, func(a, b Pair) int {
		if a.Second != b.Second {
			return cmp.Compare(a.Second, b.Second)
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	if known {
		pr := &l.Pairs[j]
		pr.Count++
		pr.MinGapNs = min(pr.MinGapNs, gap)
		pr.MaxGapNs = max(pr.MaxGapNs, gap)
	} else {
		l.Pairs = slices.Insert(l.Pairs, j, want)
		l.Prob = 1
	}
	l.MaxGapNs = max(l.MaxGapNs, gap)
	if d := p.Params.Delay(l.MaxGapNs); d > l.DelayNs {
		l.DelayNs = d
	}
	return !known
}

// Clone returns a deep copy of the plan.
func (p *Plan) Clone() *Plan {
	c := *p
	c.Provenance.Merged = slices.Clone(p.Provenance.Merged)
	if p.Provenance.Forks != nil {
		n := *p.Provenance.Forks
		c.Provenance.Forks = &n
	}
	if p.Provenance.Late != nil {
		n := *p.Provenance.Late
		c.Provenance.Late = &n
	}
	c.Locations = make([]Location, len(p.Locations))
	for i := range p.Locations {
		c.Locations[i] = cloneLocation(&p.Locations[i])
	}
	c.Runs = slices.Clone(p.Runs)
	c.Bugs = slices.Clone(p.Bugs)
	return &c
}

// WithTraps returns the plan with the traps added (a clone, when there
// are any; p itself otherwise).
func (p *Plan) WithTraps(traps []Trap) *Plan {
	if len(traps) == 0 {
		return p
	}
	c := p.Clone()
	for _, t := range traps {
		c.AddTrap(t)
	}
	return c
}

// Without returns the plan without the pairs drop selects, and without
// the locations that have no pair left: a copy that shares the rest of p
// (for reading and saving, not for changing), or p itself when drop
// selects none.
func (p *Plan) Without(drop func(*Pair) bool) *Plan {
	var locs []Location
	for i := range p.Locations {
		l := &p.Locations[i]
		keep := l.Pairs
		for k := range l.Pairs {
			if drop(&l.Pairs[k]) {
				keep = slices.Clone(l.Pairs[:k])
				for m := k + 1; m < len(l.Pairs); m++ {
					if !drop(&l.Pairs[m]) {
						keep = append(keep, l.Pairs[m])
					}
				}
				break
			}
		}
		if locs == nil && len(keep) == len(l.Pairs) {
			continue
		}
		if locs == nil {
			locs = append(make([]Location, 0, len(p.Locations)), p.Locations[:i]...)
		}
		if len(keep) > 0 {
			c := *l
			c.Pairs = keep
			locs = append(locs, c)
		}
	}
	if locs == nil {
		return p
	}
	c := *p
	c.Locations = locs
	return &c
}
