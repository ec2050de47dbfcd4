package plans

import (
	"cmp"
	"slices"
)

// AddNew adds to p the candidate pairs of fresh that p does not have, at
// most limit of them (limit ≤ 0: no bound), and returns how many it added.
// fresh is a plan made, with p's near-miss window, from the trace of a
// detection run that also recorded (docs/algorithm.md, "Plans that keep
// learning"). Unlike Merge it leaves everything p already has alone: the
// pairs p has keep their gaps, prunes and counts (a run with delays says
// nothing new about them), its locations keep their delays, probabilities
// and history. A new location comes with fresh's delay, probability and
// interference set; a new pair on an existing location joins it, and a
// location that had left S (P = 0) comes back with P = 1 for it. fresh's
// runs, bugs and provenance are ignored.
func (p *Plan) AddNew(fresh *Plan, limit int) int {
	added := 0
	full := func() bool { return limit > 0 && added >= limit }
	for i := range fresh.Locations {
		if full() {
			break
		}
		fl := &fresh.Locations[i]
		l := p.Location(fl.Site)
		if l == nil {
			nl := cloneLocation(fl)
			nl.Delays, nl.Grown = 0, 0
			nl.Pairs = nl.Pairs[:0]
			for _, pr := range fl.Pairs {
				if full() {
					break
				}
				pr.Pruned = ""
				nl.Pairs = append(nl.Pairs, pr)
				added++
			}
			if len(nl.Pairs) == 0 {
				continue
			}
			p.Locations = append(p.Locations, nl)
			slices.SortFunc(p.Locations, func(a, b Location) int { return cmp.Compare(a.Site, b.Site) })
			continue
		}
		grew := false
		for _, pr := range fl.Pairs {
			if full() {
				break
			}
			if slices.ContainsFunc(l.Pairs, func(o Pair) bool { return o.Second == pr.Second && o.Kind == pr.Kind }) {
				continue
			}
			pr.Pruned = ""
			l.Pairs = append(l.Pairs, pr)
			added++
			grew = true
		}
		if !grew {
			continue
		}
		slices.SortFunc(l.Pairs, func(a, b Pair) int {
			if a.Second != b.Second {
				return cmp.Compare(a.Second, b.Second)
			}
			return cmp.Compare(a.Kind, b.Kind)
		})
		if l.Prob == 0 {
			l.Prob = 1
		}
		if l.DelayNs == 0 {
			l.DelayNs = fl.DelayNs
		}
		for _, s := range fl.Interference {
			if !slices.Contains(l.Interference, s) {
				l.Interference = append(l.Interference, s)
			}
		}
		slices.Sort(l.Interference)
	}
	return added
}
