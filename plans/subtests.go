package plans

import (
	"regexp"
	"slices"
	"strings"
)

// SetSubtests records which subtests reached which sites (nil: none is
// known).
func (p *Plan) SetSubtests(st *Subtests) { p.Subtests = st }

// RunWholeTest makes the plan's runs take the whole test from now on: a
// run of only some subtests reached none of its delay locations. It does
// nothing once such a run delayed (or skipped a delay): then the subtests
// do reach the plan's code alone, and the run that reached none took
// another schedule, as a run of the whole test can. It reports whether the
// runs now take the whole test.
func (p *Plan) RunWholeTest() bool {
	if p.Subtests == nil {
		return false
	}
	for _, r := range p.Runs {
		if r.Sub != "" && (r.Delays > 0 || r.Skipped > 0) {
			return p.Subtests.Whole
		}
	}
	p.Subtests.Whole = true
	return true
}

// RunWholeTestAfterFailure makes the plan's runs take the whole test from
// now on because a run of only some subtests, the last of the plan's runs,
// failed without a bug, while no run of some subtests before it passed:
// the subtests may depend on one another (on a server goroutine the test
// shares between them, on state an earlier subtest leaves), so what such
// a run did says nothing about the delays. Once a run of some subtests
// has passed, they do run alone, and a later failure is the delays' as
// in a run of the whole test. It reports whether the plan took only some
// subtests before and takes the whole test now.
func (p *Plan) RunWholeTestAfterFailure() bool {
	if p.Subtests == nil || p.Subtests.Whole || len(p.Runs) == 0 {
		return false
	}
	if subtestsPassed(p.Runs[:len(p.Runs)-1]) {
		return false
	}
	p.Subtests.Whole = true
	return true
}

// SubtestsPassedAlone says whether a run of only some subtests of the
// plan's test passed: then they run alone.
func (p *Plan) SubtestsPassedAlone() bool { return subtestsPassed(p.Runs) }

func subtestsPassed(runs []Run) bool {
	for _, r := range runs {
		if r.Sub != "" && r.Outcome == "pass" {
			return true
		}
	}
	return false
}

// SubtestPattern returns the -test.run pattern below the test's name
// (the part after its first slash) that selects the fewest subtests which,
// as in the preparation run, reach both sites of every live pair of the
// plan: a pair whose sites some subtest reached together takes one such
// subtest (the one most other pairs take too); a pair whose sites were
// reached only in different subtests takes one of each; a site reached
// outside every subtest, or never, needs none. It returns "" when the
// whole test should run: the plan has no subtests, Whole is set, or the
// pairs need as many subtests as the test has.
func (p *Plan) SubtestPattern() string {
	st := p.Subtests
	if st == nil || st.Whole || len(st.List) == 0 {
		return ""
	}
	in := map[uint32][]int{}
	for i, s := range st.List {
		for _, site := range s.Sites {
			in[site] = append(in[site], i)
		}
	}
	outside := map[uint32]bool{}
	for _, site := range st.Outside {
		outside[site] = true
	}
	// needs: per pair whose sites are not reached by every run, the
	// subtests that reach both, or those that reach either when none
	// does (then one of each side).
	type need struct{ both, first, second []int }
	var needs []need
	for i := range p.Locations {
		l := &p.Locations[i]
		if !l.Live() {
			continue
		}
		for _, pr := range l.Pairs {
			if pr.Pruned != "" {
				continue
			}
			a, b := in[l.Site], in[pr.Second]
			freeA := outside[l.Site] || len(a) == 0
			freeB := outside[pr.Second] || len(b) == 0
			switch {
			case freeA && freeB:
				continue
			case freeA:
				needs = append(needs, need{both: b})
			case freeB:
				needs = append(needs, need{both: a})
			default:
				both := intersect(a, b)
				if len(both) > 0 {
					needs = append(needs, need{both: both})
				} else {
					needs = append(needs, need{first: a, second: b})
				}
			}
		}
	}
	if len(needs) == 0 {
		return ""
	}
	// Greedy cover: the subtest most needs can take first.
	votes := make([]int, len(st.List))
	for _, n := range needs {
		for _, i := range n.both {
			votes[i]++
		}
	}
	chosen := map[int]bool{}
	pick := func(c []int) {
		for _, i := range c {
			if chosen[i] {
				return
			}
		}
		best := c[0]
		for _, i := range c[1:] {
			if votes[i] > votes[best] {
				best = i
			}
		}
		chosen[best] = true
	}
	// Pairs with the fewest choices first: they decide, the others
	// then often find a subtest already taken.
	slices.SortStableFunc(needs, func(x, y need) int {
		return (len(x.both) + len(x.first)) - (len(y.both) + len(y.first))
	})
	for _, n := range needs {
		if len(n.both) > 0 {
			pick(n.both)
		} else {
			pick(n.first)
			pick(n.second)
		}
	}
	if len(chosen) >= st.Count {
		return ""
	}
	var names []string
	for i := range st.List {
		if chosen[i] {
			names = append(names, st.List[i].Name)
		}
	}
	return subtestRun(names)
}

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// subtestRun is the -test.run pattern below the test's own name that
// selects the subtests names (full names, "TestX/a"; a name given to
// t.Run may hold slashes itself): go test matches a subtest's name element
// by element, split at slashes, so the pattern holds one alternation per
// element, down to the shallowest name's depth (a deeper element would
// also filter the nested subtests of a shallower name). It may select a
// few more subtests than named, never fewer.
func subtestRun(names []string) string {
	var levels [][]string
	depth := -1
	for _, n := range names {
		_, rest, ok := strings.Cut(n, "/")
		if !ok {
			return ""
		}
		es := strings.Split(rest, "/")
		if depth < 0 || len(es) < depth {
			depth = len(es)
		}
		for i, e := range es {
			if i == len(levels) {
				levels = append(levels, nil)
			}
			q := regexp.QuoteMeta(e)
			if !slices.Contains(levels[i], q) {
				levels[i] = append(levels[i], q)
			}
		}
	}
	levels = levels[:max(depth, 0)]
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = "^(?:" + strings.Join(l, "|") + ")$"
	}
	return strings.Join(parts, "/")
}
