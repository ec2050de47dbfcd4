package analyze

import (
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/memorder/wafl/plans"
)

// Interference sets (WAFL thesis §4.4). For every pair instance that
// entered S — ℓ1 at τ1, ℓ2 at τ2 in goroutine g2 — pass 2 recorded the
// window [τ1 − δ, τ2] of g2 under ℓ1. Once S is known, pass 3 scans the
// trace again: every event at a site of S (a candidate location ℓ*) that
// falls in a window of its own goroutine adds ℓ* to the interference set
// of the window's ℓ1. The window includes τ2 itself, so when ℓ2 is itself a
// delay location (Figure 4.2a) it interferes with ℓ1, and another dynamic
// instance of ℓ1 in g2 (Figure 4.2b) interferes with ℓ1.

// segIndex answers "which ℓ1 windows of this goroutine contain time t"
// with one binary search: the windows are cut into elementary segments
// [points[k], points[k+1]) that carry the list of ℓ1 covering them.
type segIndex struct {
	points   []int64
	start    []uint32 // labels of segment k: labels[start[k]:start[k+1]]
	labels   []int32  // location indexes in the plan
	lastSite []int32  // per segment: the last site index marked (memo)
	lastSeg  int
}

type labeled struct {
	lo, end int64 // half-open [lo, end)
	label   int32
}

func buildSegIndex(ivs []labeled) *segIndex {
	points := make([]int64, 0, 2*len(ivs))
	for _, iv := range ivs {
		points = append(points, iv.lo, iv.end)
	}
	slices.Sort(points)
	points = slices.Compact(points)
	nseg := len(points) - 1
	cnt := make([]uint32, nseg+1)
	pos := func(t int64) int {
		k, _ := slices.BinarySearch(points, t)
		return k
	}
	type span struct{ a, b int }
	spans := make([]span, len(ivs))
	for i, iv := range ivs {
		a, b := pos(iv.lo), pos(iv.end)
		spans[i] = span{a, b}
		for k := a; k < b; k++ {
			cnt[k+1]++
		}
	}
	for k := 1; k <= nseg; k++ {
		cnt[k] += cnt[k-1]
	}
	labels := make([]int32, cnt[nseg])
	fill := slices.Clone(cnt[:nseg])
	for i, iv := range ivs {
		for k := spans[i].a; k < spans[i].b; k++ {
			labels[fill[k]] = iv.label
			fill[k]++
		}
	}
	last := make([]int32, nseg)
	for k := range last {
		last[k] = -1
	}
	return &segIndex{points: points, start: cnt, labels: labels, lastSite: last, lastSeg: -1}
}

// segment returns the segment containing t, or -1.
func (x *segIndex) segment(t int64) int {
	if k := x.lastSeg; k >= 0 && x.points[k] <= t && t < x.points[k+1] {
		return k
	}
	k := sort.Search(len(x.points), func(i int) bool { return x.points[i] > t }) - 1
	if k < 0 || k >= len(x.points)-1 {
		return -1
	}
	x.lastSeg = k
	return k
}

// siteSet maps the sites of S to their location index.
type siteSet struct {
	dense []int32 // site → index+1; nil when sites are too sparse
	m     map[uint32]int32
}

func newSiteSet(locs []plans.Location) siteSet {
	maxSite := locs[len(locs)-1].Site
	if maxSite < 1<<22 {
		d := make([]int32, maxSite+1)
		for i, l := range locs {
			d[l.Site] = int32(i) + 1
		}
		return siteSet{dense: d}
	}
	m := make(map[uint32]int32, len(locs))
	for i, l := range locs {
		m[l.Site] = int32(i) + 1
	}
	return siteSet{m: m}
}

// index returns the location index of site, or -1.
func (s *siteSet) index(site uint32) int32 {
	if s.dense != nil {
		if int(site) < len(s.dense) {
			return s.dense[site] - 1
		}
		return -1
	}
	return s.m[site] - 1
}

// marks is the set of (ℓ1, ℓ*) interference entries, as a bit matrix
// when S is small and a hash set otherwise.
type marks struct {
	n    int
	bits [][]uint64
	set  map[uint64]struct{}
}

func newMarks(n int) *marks {
	if n <= 4096 {
		return &marks{n: n, bits: make([][]uint64, n)}
	}
	return &marks{n: n, set: make(map[uint64]struct{})}
}

func (m *marks) add(l1, ls int32) {
	if m.bits != nil {
		row := m.bits[l1]
		if row == nil {
			row = make([]uint64, (m.n+63)/64)
			m.bits[l1] = row
		}
		row[ls>>6] |= 1 << (ls & 63)
		return
	}
	m.set[uint64(l1)<<32|uint64(uint32(ls))] = struct{}{}
}

// each calls fn for every entry, in (l1, ls) order.
func (m *marks) each(fn func(l1, ls int32)) {
	if m.bits != nil {
		for l1, row := range m.bits {
			for w, word := range row {
				for ; word != 0; word &= word - 1 {
					fn(int32(l1), int32(w*64+bits.TrailingZeros64(word)))
				}
			}
		}
		return
	}
	keys := make([]uint64, 0, len(m.set))
	for k := range m.set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fn(int32(k>>32), int32(uint32(k)))
	}
}

// pass3 computes the interference sets of the plan's locations.
func (a *analysis) pass3(plan *plans.Plan) error {
	sites := newSiteSet(plan.Locations)
	// Windows per goroutine, merged per ℓ1.
	perG := make(map[uint64][]labeled)
	for k, l := range a.ivs {
		label := sites.index(k.first)
		all := append(l.done, l.cur)
		slices.SortFunc(all, func(x, y interval) int {
			switch {
			case x.lo < y.lo:
				return -1
			case x.lo > y.lo:
				return 1
			}
			return 0
		})
		cur := all[0]
		emit := func(iv interval) {
			end := iv.hi + 1
			if iv.hi == math.MaxInt64 {
				end = iv.hi // saturate: the last nanosecond of time is lost
			}
			perG[k.g] = append(perG[k.g], labeled{iv.lo, end, label})
		}
		for _, iv := range all[1:] {
			if iv.lo <= cur.hi {
				cur.hi = max(cur.hi, iv.hi)
				continue
			}
			emit(cur)
			cur = iv
		}
		emit(cur)
	}
	a.ivs = nil
	idx := make(map[uint64]*segIndex, len(perG))
	for g, ivs := range perG {
		idx[g] = buildSegIndex(ivs)
	}
	perG = nil
	m := newMarks(len(plan.Locations))
	var lastG uint64
	var lastX *segIndex
	haveLast := false
	_, err := a.scan("pass 3 (interference)", func(c *Columns) {
		n := c.Len()
		for i, op := range c.Op[:n] {
			if op < opInit || op > opDispose {
				continue
			}
			ls := sites.index(c.Site[i])
			if ls < 0 {
				continue
			}
			g := c.G[i]
			if !haveLast || g != lastG {
				lastG, lastX, haveLast = g, idx[g], true
			}
			x := lastX
			if x == nil {
				continue
			}
			k := x.segment(c.Time[i])
			if k < 0 || x.lastSite[k] == ls {
				continue
			}
			x.lastSite[k] = ls
			for _, l1 := range x.labels[x.start[k]:x.start[k+1]] {
				m.add(l1, ls)
			}
		}
	})
	if err != nil {
		return err
	}
	m.each(func(l1, ls int32) {
		l := &plan.Locations[l1]
		l.Interference = append(l.Interference, plan.Locations[ls].Site)
	})
	return nil
}
