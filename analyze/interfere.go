package analyze

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/plans"
)

// Interference sets (WAFL thesis §4.4). For every pair instance that
// entered S — ℓ1 at τ1, ℓ2 at τ2 in goroutine g2 — the pairer recorded the
// window [τ1 − δ, τ2] of g2 under ℓ1. Once S is known, pass 3 scans the
// rows the strategy kept (the interference log or the row spill): every
// event at a site of S (a candidate location ℓ*) that falls in a window of
// its own goroutine adds ℓ* to the interference set of the window's ℓ1. The window includes τ2 itself, so when ℓ2 is itself a
// delay location (Figure 4.2a) it interferes with ℓ1, and another dynamic
// instance of ℓ1 in g2 (Figure 4.2b) interferes with ℓ1.

// winIndex holds the windows of one goroutine and finds, for an event of
// a candidate site ℓ* at time t, the ℓ1 of every window containing t.
//
// Events mostly arrive in time order per goroutine, so each site keeps a
// sweep position: having handled an event at t0, every window containing
// t0 is marked, and an event at t ≥ t0 only needs the windows starting in
// (t0, t] — each window is visited once per site and sweep. An event
// earlier than t0 (the trace is not sorted) is answered by a stabbing
// query over a second copy of the windows cut into pieces of at most 2δ:
// sorted by start with the prefix maximum of their ends, the query walks
// back from the last piece starting at or before t and stops at the first
// piece no earlier piece reaches past.
type winIndex struct {
	// whole merged windows, sorted by start
	lo, hi []int64
	label  []int32 // location index of the window's ℓ1
	// pieces of at most 2δ, sorted by start
	plo, phi, pmax []int64 // pmax[i] = max(phi[:i+1])
	plabel         []int32
	// per candidate site index: the sweep (allocated at the first event)
	sweep []sweep
}

type sweep struct {
	t0     int64
	nextLo int64 // lo[k], or MaxInt64 past the last window
	k      int32 // first window with lo > t0
	run    bool  // t0 is valid
}

func sortLabeled(ws []labeled) {
	slices.SortFunc(ws, func(x, y labeled) int {
		switch {
		case x.lo < y.lo:
			return -1
		case x.lo > y.lo:
			return 1
		}
		return 0
	})
}

func buildWinIndex(ws []labeled, piece int64) *winIndex {
	sortLabeled(ws)
	n := len(ws)
	x := &winIndex{lo: make([]int64, n), hi: make([]int64, n), label: make([]int32, n)}
	np := 0
	for i, w := range ws {
		x.lo[i], x.hi[i], x.label[i] = w.lo, w.hi, w.label
		np += pieces(w, piece)
	}
	x.pmax = make([]int64, np)
	if np == n {
		// No window is longer than a piece: the pieces are the windows.
		x.plo, x.phi, x.plabel = x.lo, x.hi, x.label
	} else {
		ps := make([]labeled, 0, np)
		for _, w := range ws {
			for w.hi-w.lo >= piece && w.lo <= math.MaxInt64-piece {
				ps = append(ps, labeled{w.lo, w.lo + piece - 1, w.label})
				w.lo += piece
			}
			ps = append(ps, w)
		}
		sortLabeled(ps)
		x.plo, x.phi, x.plabel = make([]int64, np), make([]int64, np), make([]int32, np)
		for i, w := range ps {
			x.plo[i], x.phi[i], x.plabel[i] = w.lo, w.hi, w.label
		}
	}
	m := int64(math.MinInt64)
	for i, h := range x.phi {
		m = max(m, h)
		x.pmax[i] = m
	}
	return x
}

// pieces is the number of pieces of at most piece that buildWinIndex cuts
// w into.
func pieces(w labeled, piece int64) int {
	k := 1
	for w.hi-w.lo >= piece && w.lo <= math.MaxInt64-piece {
		k++
		w.lo += piece
	}
	return k
}

// event marks ℓ* (location index ls) as interfering with the ℓ1 of every
// window of this goroutine containing t.
func (x *winIndex) event(t int64, m *marks, ls int32) {
	sw := &x.sweep[ls]
	if sw.run && t >= sw.t0 && t < sw.nextLo {
		sw.t0 = t // no window starts in (t0, t]: nothing new
		return
	}
	if sw.run && t < sw.t0 {
		x.stab(t, m, ls)
		return
	}
	k := int(sw.k)
	if !sw.run {
		k = sort.Search(len(x.lo), func(i int) bool { return x.lo[i] > t })
		// windows starting at or before t: a stabbing query
		x.stab(t, m, ls)
	} else {
		row := m.row(ls)
		for ; k < len(x.lo) && x.lo[k] <= t; k++ {
			if x.hi[k] >= t {
				m.mark(row, x.label[k], ls)
			}
		}
	}
	next := int64(math.MaxInt64)
	if k < len(x.lo) {
		next = x.lo[k]
	}
	*sw = sweep{t0: t, nextLo: next, k: int32(k), run: true}
}

// stab marks the ℓ1 of every piece containing t.
func (x *winIndex) stab(t int64, m *marks, ls int32) {
	row := m.row(ls)
	k := sort.Search(len(x.plo), func(i int) bool { return x.plo[i] > t })
	for i := k - 1; i >= 0 && x.pmax[i] >= t; i-- {
		if x.phi[i] >= t {
			m.mark(row, x.plabel[i], ls)
		}
	}
}

// ivKey is (ℓ1, ℓ2's goroutine): the interference windows of ℓ1 in that
// goroutine.
type ivKey struct {
	first uint32
	g     uint64
}

type labeled struct {
	lo, hi int64 // closed [lo, hi]
	label  int32
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

// marks is the set of (ℓ1, ℓ*) interference entries. When S is small
// enough (≤ 16384 locations, at most 32 MiB) it is a bit matrix with one
// row per ℓ*, so that marking every ℓ1 window around one event of ℓ* touches
// a single row; beyond that it is a hash set.
type marks struct {
	n    int
	rows [][]uint64 // rows[ℓ*] has bit ℓ1
	set  map[uint64]struct{}
}

func newMarks(n int) *marks {
	if n <= 16384 {
		return &marks{n: n, rows: make([][]uint64, n)}
	}
	return &marks{n: n, set: make(map[uint64]struct{})}
}

// row returns the bit row of ℓ*, or nil in hash-set mode.
func (m *marks) row(ls int32) []uint64 {
	if m.rows == nil {
		return nil
	}
	r := m.rows[ls]
	if r == nil {
		r = make([]uint64, (m.n+63)/64)
		m.rows[ls] = r
	}
	return r
}

// mark adds (ℓ1, ℓ*); row is m.row(ls).
func (m *marks) mark(row []uint64, l1, ls int32) {
	if row != nil {
		row[l1>>6] |= 1 << (l1 & 63)
		return
	}
	m.set[uint64(l1)<<32|uint64(uint32(ls))] = struct{}{}
}

// or adds the entries of o (same size) to m.
func (m *marks) or(o *marks) {
	if m.rows != nil {
		for ls, r := range o.rows {
			if r == nil {
				continue
			}
			row := m.row(int32(ls))
			for i, w := range r {
				row[i] |= w
			}
		}
		return
	}
	for k := range o.set {
		m.set[k] = struct{}{}
	}
}

// entries returns, for every ℓ1, its ℓ* in increasing order.
func (m *marks) entries() [][]int32 {
	out := make([][]int32, m.n)
	if m.rows != nil {
		// Count first, so that every list is allocated once, in one slab.
		count := make([]int32, m.n)
		total := 0
		for _, row := range m.rows {
			for w, word := range row {
				for ; word != 0; word &= word - 1 {
					count[w*64+bits.TrailingZeros64(word)]++
					total++
				}
			}
		}
		slab := make([]int32, 0, total)
		for l1, c := range count {
			if c > 0 {
				out[l1] = slab[len(slab) : len(slab) : len(slab)+int(c)]
				slab = slab[:len(slab)+int(c)]
			}
		}
		for ls, row := range m.rows {
			for w, word := range row {
				for ; word != 0; word &= word - 1 {
					l1 := w*64 + bits.TrailingZeros64(word)
					out[l1] = append(out[l1], int32(ls))
				}
			}
		}
		return out
	}
	for k := range m.set {
		out[k>>32] = append(out[k>>32], int32(uint32(k)))
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// windows are the interference windows of S's instances, per goroutine,
// that pass 3 matches rows against, and the entries it found.
type windows struct {
	idx   map[uint64]*winIndex // by goroutine
	sites siteSet
	m     *marks
	nloc  int
	// direct-mapped cache in front of idx for batch, remembering misses too
	gcache []gSlot
}

type gSlot struct {
	g  uint64
	x  *winIndex
	ok bool
}

// pass3 computes the interference sets of the plan's locations from the
// rows the strategy kept.
func (a *analysis) pass3(plan *plans.Plan, s strategy) error {
	w := a.windows(plan.Locations)
	if err := s.interfere(a, w); err != nil {
		return err
	}
	var set []uint32
	for l1, lss := range w.m.entries() {
		if len(lss) == 0 {
			continue
		}
		set = set[:0]
		for _, ls := range lss {
			set = append(set, plan.Locations[ls].Site)
		}
		plan.SetInterference(plan.Locations[l1].Site, set)
	}
	return nil
}

// windows gathers the windows of every pair per goroutine, merged per ℓ1,
// and indexes them (the goroutines' indexes built on two workers when
// there are two CPUs).
func (a *analysis) windows(locs []plans.Location) *windows {
	sites := newSiteSet(locs)
	wins := a.wins
	if wins == nil {
		wins = newWinTable()
	}
	a.wins = nil
	// Pairers without a table (check-then-act) left their windows in the
	// aggregates.
	for k, p := range a.pairs {
		for i := range p.ivs {
			w := &p.ivs[i]
			for _, iv := range w.l.done {
				wins.add(k.first, w.g, iv)
			}
			wins.add(k.first, w.g, w.l.cur)
		}
		p.ivs, p.at = nil, nil
	}
	// Each goroutine's list is allocated once, at most the number of its
	// keys' intervals (each merges some of them).
	size := make(map[uint64]int)
	wins.counts(func(k ivKey, n int) { size[k.g] += n })
	perG := make(map[uint64][]labeled, len(size))
	for g, n := range size {
		perG[g] = make([]labeled, 0, n)
	}
	size = nil
	var gs []uint64
	wins.each(func(k ivKey, ivs []interval) {
		label := sites.index(k.first)
		if label < 0 {
			// A pair's ℓ1 that the plan did not keep (a capped or
			// dropped location) has no interference set to fill.
			return
		}
		ws := perG[k.g]
		if len(ws) == 0 {
			gs = append(gs, k.g)
		}
		for _, iv := range ivs {
			ws = append(ws, labeled{iv.lo, iv.hi, label})
		}
		perG[k.g] = ws
	})
	xs := make([]*winIndex, len(gs))
	workers := min(runtime.GOMAXPROCS(0), 2, len(gs))
	var next atomic.Int64
	var wg sync.WaitGroup
	panics := make([]*InternalError, workers)
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer catch(&panics[k])
			for {
				i := int(next.Add(1) - 1)
				if i >= len(gs) {
					return
				}
				xs[i] = buildWinIndex(perG[gs[i]], 2*a.delta)
			}
		}()
	}
	wg.Wait()
	rethrow(panics)
	idx := make(map[uint64]*winIndex, len(gs))
	for i, g := range gs {
		idx[g] = xs[i]
	}
	return &windows{idx: idx, sites: sites, m: newMarks(len(locs)), nloc: len(locs), gcache: make([]gSlot, 1<<12)}
}

// batch matches the init, use and dispose rows of c, of any goroutines,
// against the windows.
func (w *windows) batch(c *trace.Batch) {
	n := c.Len()
	for i, op := range c.Op[:n] {
		if abi.Op(op).Sited() {
			w.event(c.Time[i], c.G[i], c.Site[i])
		}
	}
}

func (w *windows) event(t int64, g uint64, site uint32) {
	ls := w.sites.index(site)
	if ls < 0 {
		return
	}
	gs := &w.gcache[(g*0x9E3779B97F4A7C15)>>52]
	if !gs.ok || gs.g != g {
		*gs = gSlot{g, w.idx[g], true}
	}
	x := gs.x
	if x == nil {
		return
	}
	if x.sweep == nil {
		x.sweep = make([]sweep, w.nloc)
	}
	x.event(t, w.m, ls)
}

// pass3Log runs pass 3 over the interference log, one goroutine of the
// trace at a time (its windows and sweeps stay in the cache). With two
// CPUs, two workers share the goroutines, balanced by rows, each with its
// own marks, merged into w.m at the end.
func (a *analysis) pass3Log(l *ilog, w *windows) error {
	type job struct {
		gi uint32
		x  *winIndex
	}
	var jobs []job
	for i, g := range l.gs {
		if x := w.idx[g]; x != nil && l.per[i].rows > 0 {
			jobs = append(jobs, job{uint32(i), x})
		}
	}
	slices.SortFunc(jobs, func(p, q job) int { return cmp.Compare(l.per[q.gi].rows, l.per[p.gi].rows) })
	workers := 1
	if runtime.GOMAXPROCS(0) > 1 && len(jobs) > 1 {
		workers = 2
	}
	parts := make([][]job, workers)
	load := make([]int64, workers)
	for _, j := range jobs {
		k := 0
		for i := range load {
			if load[i] < load[k] {
				k = i
			}
		}
		parts[k] = append(parts[k], j)
		load[k] += l.per[j.gi].rows
	}
	ms := []*marks{w.m}
	for len(ms) < workers {
		ms = append(ms, newMarks(w.nloc))
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[k] = internalError(r)
				}
			}()
			mk := ms[k]
			for _, j := range parts[k] {
				if a.ctx.Err() != nil {
					errs[k] = a.ctx.Err()
					return
				}
				x := j.x
				x.sweep = make([]sweep, w.nloc)
				err := l.scan(j.gi, func(t int64, site uint32) {
					if ls := w.sites.index(site); ls >= 0 {
						x.event(t, mk, ls)
					}
				})
				x.sweep = nil
				if err != nil {
					errs[k] = fmt.Errorf("pass 3 (interference): %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, mk := range ms[1:] {
		w.m.or(mk)
	}
	return errors.Join(errs...)
}
