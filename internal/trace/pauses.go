package trace

import (
	"cmp"
	"slices"
	"sort"
)

// Pauses are the stretches of a recording detection run during which wafl
// itself held a goroutine in a delay, on the trace's clock (the runtime's
// monotonic nanoseconds). A trace of such a run converted without them
// (ConvertWithout) reads as if no delay had been injected: every time
// stamp moves back by the pause time before it, so that two accesses that
// a delay pushed apart are as close again as the program alone put them.
// Overlapping delays of several goroutines count once (their union): time
// during which any goroutine was held is taken out, which is exact when one
// goroutine at a time was delayed and shortens gaps otherwise — never
// lengthens them.
type Pauses struct {
	start, end []int64 // disjoint, sorted intervals [start, end)
	before     []int64 // before[i]: total length of the intervals before i
}

// NewPauses returns the union of the intervals [iv[k][0], iv[k][1]);
// empty or reversed ones are ignored. It returns nil when none is left.
func NewPauses(iv [][2]int64) *Pauses {
	iv = slices.DeleteFunc(slices.Clone(iv), func(x [2]int64) bool { return x[1] <= x[0] })
	if len(iv) == 0 {
		return nil
	}
	slices.SortFunc(iv, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	p := &Pauses{}
	var sum int64
	for _, x := range iv {
		if n := len(p.end); n > 0 && x[0] <= p.end[n-1] {
			if x[1] > p.end[n-1] {
				sum += x[1] - p.end[n-1]
				p.end[n-1] = x[1]
			}
			continue
		}
		p.start = append(p.start, x[0])
		p.end = append(p.end, x[1])
		p.before = append(p.before, sum)
		sum += x[1] - x[0]
	}
	return p
}

// Total is the length of the union of the pauses.
func (p *Pauses) Total() int64 {
	if p == nil || len(p.end) == 0 {
		return 0
	}
	n := len(p.end) - 1
	return p.before[n] + p.end[n] - p.start[n]
}

// Remove returns t less the pause time before it; a t inside a pause
// maps to the pause's start.
func (p *Pauses) Remove(t int64) int64 {
	if p == nil {
		return t
	}
	// i: the first interval starting after t.
	i := sort.Search(len(p.start), func(k int) bool { return p.start[k] > t })
	if i == 0 {
		return t
	}
	k := i - 1
	if t < p.end[k] {
		return p.start[k] - p.before[k]
	}
	return t - p.before[k] - (p.end[k] - p.start[k])
}
