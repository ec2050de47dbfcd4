package plans

import (
	"cmp"
	"errors"
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

// MarkFrom sets the origin (Pair.From) of every pair of p to from, except
// the predicted and static pairs', which keep their mark whichever run's
// trace they came from.
func (p *Plan) MarkFrom(from string) {
	for i := range p.Locations {
		for k := range p.Locations[i].Pairs {
			if pr := &p.Locations[i].Pairs[k]; !Guessed(pr.From) {
				pr.From = from
			}
		}
	}
}

// CountLearnRun records one more recording run made for p because it had
// no candidates (Provenance.Learned).
func (p *Plan) CountLearnRun() {
	p.Provenance.Learned++
}

// MergeLearned returns p, a plan without candidates, merged with fresh,
// the plan analyzed from a recording run of its test, and how many
// candidate pairs that added (also counted in the result's
// Provenance.LearnedCandidates). No candidate set was built with p's
// analysis parameters, so fresh's (δ, the maximum delay and the load
// factor they were scaled by) replace them, and so does its count of late
// goroutines (Provenance.Late, a property of the latest run); p's other
// provenance, runs and bugs stay. fresh's pairs are marked FromLearn (MarkFrom). Neither input is
// modified.
func MergeLearned(p, fresh *Plan) (*Plan, int, error) {
	if len(p.Locations) > 0 {
		return nil, 0, errors.New("merge learned candidates: the plan has candidates")
	}
	a := *p
	a.Params.NearMissNs, a.Params.MaxDelayNs = fresh.Params.NearMissNs, fresh.Params.MaxDelayNs
	a.Params.LoadFactor = fresh.Params.LoadFactor
	f := fresh.Clone()
	f.MarkFrom(FromLearn)
	merged, err := Merge(&a, f)
	if err != nil {
		return nil, 0, err
	}
	k := merged.pairCount()
	merged.Provenance.LearnedCandidates += k
	// Whether goroutines were late is a property of the latest run.
	merged.Provenance.Late = nil
	if fresh.Provenance.Late != nil {
		n := *fresh.Provenance.Late
		merged.Provenance.Late = &n
	}
	return merged, k, nil
}

// CountDetectRecord records one more detection run of p that also recorded
// its events (Provenance.DetectRecorded).
func (p *Plan) CountDetectRecord() {
	p.Provenance.DetectRecorded++
}

// AddDetected adds to p the candidate pairs of fresh, the plan analyzed
// with p's analysis parameters from the trace of a detection run that also
// recorded, that p lacks: at most MaxDetectCandidates of them (AddNew),
// marked FromDetect (MarkFrom; fresh is modified) and counted in
// Provenance.DetectCandidates. It returns how many it added.
func (p *Plan) AddDetected(fresh *Plan) int {
	fresh.MarkFrom(FromDetect)
	static := p.staticCount()
	n := p.AddNew(fresh, MaxDetectCandidates)
	p.Provenance.DetectCandidates += n
	// Static pairs the analysis had left out by its cap, now in.
	p.Provenance.StaticLeft = max(p.Provenance.StaticLeft-(p.staticCount()-static), 0)
	return n
}

// staticCount is the number of static candidate pairs of p.
func (p *Plan) staticCount() int {
	n := 0
	for i := range p.Locations {
		for _, pr := range p.Locations[i].Pairs {
			if pr.From == FromStatic {
				n++
			}
		}
	}
	return n
}

// pairCount is the number of candidate pairs of p, pruned or not.
func (p *Plan) pairCount() int {
	n := 0
	for i := range p.Locations {
		n += len(p.Locations[i].Pairs)
	}
	return n
}
