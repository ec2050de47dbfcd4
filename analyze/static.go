package analyze

import (
	"cmp"
	"math"
	"slices"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/lcc"
)

// Static pairs (docs/algorithm.md, "Beyond the observed schedule"): a
// goroutine that never ran in the recorded run (a go row without a fork
// row), that ran but reached no access, or that ran and did not take
// every path its go statement may reach, leaves out of the trace the
// accesses it would have made. The sites it may reach come from the
// static reach of its go statement (internal/reach: SSA and a call
// graph, bounded depth); they are paired with the accesses the trace
// shows in other goroutines on the same slot identity (the field key of
// predict.go), within the near-miss window after the goroutine's last
// sign of life τa (its go row, its fork row, its last row):
//
//   - use-after-dispose (ℓu → ℓd): a site ℓu it may reach that uses the
//     slot, and a dispose ℓd of another goroutine at τd with
//     τd − τa < δ, while it was alive (τd at or after its go row);
//     gap max(τd − τa, 0), so that α × gap delays its use past the
//     dispose when it comes on time (and the dispose waits for it,
//     inject's awaitLate); the interference window is the disposing
//     goroutine's [τa − δ, τd];
//   - use-before-init (ℓi → ℓu): an init ℓi of another goroutine at τi
//     with 0 ≤ τi − τa < δ; gap τi − τa, so the delayed init leaves the
//     slot nil when the goroutine's use comes; the window is the
//     goroutine's own, when it ran.
//
// Neither may be ordered before the goroutine by the fork clocks (the
// dispose or init of the parent before the go statement), and the other
// goroutine must be related to it by forks: its parent, an ancestor, or a
// descendant of its parent (related). A pair the trace has is not added
// again. Static pairs are ranked — use sites the
// trace reached first (in some goroutine), then by call distance from the
// go statement, then goroutines that never ran before those that ran —
// and at most MaxStatic enter a plan (Stats.Static; the rest are counted
// in Stats.StaticLeft). They are marked (Pair.From "static") and leave S
// like any pair when they never help; a delay never makes a report by
// itself, only a crash does.

// Reacher answers which instrumented sites a test or the goroutine of a
// go statement may reach, with their call distance (internal/reach.File).
type Reacher interface {
	// Test: the sites the top-level test may reach; nil if unknown.
	Test(name string) map[uint32]int
	// Go: the sites the goroutine of the go statement at site may
	// reach; nil if unknown.
	Go(site uint32) map[uint32]int
}

// cachedReach remembers the answers of a Reacher for one analysis.
type cachedReach struct {
	r   Reacher
	gos map[uint32]map[uint32]int
}

func (c *cachedReach) Test(name string) map[uint32]int { return c.r.Test(name) }

func (c *cachedReach) Go(site uint32) map[uint32]int {
	if m, ok := c.gos[site]; ok {
		return m
	}
	if c.gos == nil {
		c.gos = map[uint32]map[uint32]int{}
	}
	m := c.r.Go(site)
	c.gos[site] = m
	return m
}

// MaxStatic bounds the static pairs of one analysis.
const MaxStatic = 16

// maxStaticPerSite bounds the late goroutines of one go statement that
// static pairs examine (a pool of workers started by one statement).
const maxStaticPerSite = 64

// maxStaticWork bounds the (goroutine, access) combinations examined.
const maxStaticWork = 4 << 20

// lateConcurrent reports whether an access (g, clock) of another
// goroutine is not ordered before late goroutine lg by the fork clocks
// (nor after it: a goroutine it started after its last row).
func (a *analysis) lateConcurrent(lg lateG, g uint64, clock uint32) bool {
	if a.noFork {
		return true
	}
	f := a.forest.f
	if lg.child == 0 {
		// Never ran: ordered after everything before its go statement.
		if g == lg.parent {
			return clock > lg.clock
		}
		return !f.HappensBefore(lcc.Event{G: g, Clock: clock}, lcc.Event{G: lg.parent, Clock: lg.clock})
	}
	c := uint32(1) // no access: its first event
	if lg.how == ranShort {
		c = math.MaxUint32 // any later event of it
	}
	return f.Concurrent(lcc.Event{G: lg.child, Clock: c}, lcc.Event{G: g, Clock: clock})
}

// related reports whether goroutine g is the late goroutine's parent, an
// ancestor of it, or a descendant of it (the late goroutine's siblings
// and their children), and was not started by the same go statement. The
// late side of a static pair has no object: a partner in another branch
// of the fork tree — another subtest, say — or another goroutine of the
// same go statement accesses the same field of another object far more
// often than of the same one, so it is left out.
func (a *analysis) related(lg lateG, g uint64) bool {
	if lg.site != 0 && a.late.goOf[g] == lg.site {
		// Another goroutine of the same go statement: a per-object loop
		// or a worker of a pool, which owns its own object.
		return false
	}
	f := a.forest.f
	desc := func(anc, d uint64) bool {
		return anc == d || f.HappensBefore(lcc.Event{G: anc}, lcc.Event{G: d})
	}
	return desc(lg.parent, g) || desc(g, lg.parent)
}

// staticCand is a static pair with what ranks it.
type staticCand struct {
	k       pairKey
	agg     *pairAgg
	reached bool
	dist    int
	how     int
}

// staticPairs adds the static pairs of the late goroutines to a.pairs
// (after the strategy's pairs; before the predicted ones and the
// check-then-act pass, which consumes the dispose rows). It returns the
// pairs added and those left out by the cap; pairs known names (those of
// the plan the analysis extends) are neither.
func (a *analysis) staticPairs(info map[uint32]SiteInfo, lates []lateG, r Reacher, known func(first, second uint32) bool) (added, left int) {
	if r == nil || len(info) == 0 || len(lates) == 0 || a.checks == nil {
		return 0, 0
	}
	disp := sortedRows(a.checks.disposes)
	inits := sortedRows(a.checks.inits)
	if len(disp) == 0 && len(inits) == 0 {
		return 0, 0
	}
	// The use sites each go statement may reach, by field key.
	type reachUses struct {
		dist    map[uint32]int
		byField map[string][]uint32
	}
	bySite := map[uint32]*reachUses{}
	perSite := map[uint32]int{}
	cands := map[pairKey]*staticCand{}
	work := 0
	note := func(k pairKey, u uint32, ru *reachUses, lg lateG, obj uint64, gap int64, wg uint64, iv interval) {
		if _, ok := a.pairs[k]; ok {
			return // the trace saw this pair
		}
		if known != nil && known(k.first, k.second) {
			return // the plan to extend has it
		}
		c := cands[k]
		if c == nil {
			c = &staticCand{k: k, agg: &pairAgg{minGap: gap, maxGap: gap, obj: obj}, reached: a.late.reached(u), dist: ru.dist[u], how: lg.how}
			cands[k] = c
		}
		agg := c.agg
		agg.count++
		agg.minGap = min(agg.minGap, gap)
		if gap > agg.maxGap || gap == agg.maxGap && obj < agg.obj {
			agg.maxGap, agg.obj = gap, obj
		}
		c.dist = min(c.dist, ru.dist[u])
		c.how = min(c.how, lg.how)
		if wg != 0 {
			agg.window(wg, iv)
		}
	}
	for _, lg := range lates {
		if lg.site == 0 || work > maxStaticWork {
			continue
		}
		ru, ok := bySite[lg.site]
		if !ok {
			ru = &reachUses{dist: r.Go(lg.site), byField: map[string][]uint32{}}
			for s := range ru.dist {
				if si, ok := info[s]; ok && useKind(si.Kind) && si.Field != "" {
					ru.byField[si.Field] = append(ru.byField[si.Field], s)
				}
			}
			for _, us := range ru.byField {
				slices.Sort(us)
			}
			bySite[lg.site] = ru
		}
		if len(ru.byField) == 0 {
			continue
		}
		if perSite[lg.site]++; perSite[lg.site] > maxStaticPerSite {
			continue
		}
		// Disposes of other goroutines while it was alive or in
		// [τa, τa + δ).
		for _, d := range window(disp, lg.from, lg.at, a.delta) {
			work++
			// The cheap tests first: most disposes are of fields the
			// goroutine cannot reach, and the clock tests walk the forest.
			ds, ok := info[d.site]
			if !ok || d.g == lg.child || len(ru.byField[ds.Field]) == 0 || !a.lateConcurrent(lg, d.g, d.clock) || !a.related(lg, d.g) {
				continue
			}
			for _, u := range ru.byField[ds.Field] {
				if sameField(ds, info[u]) {
					lo := lg.at - a.delta
					if lo > lg.at { // overflow
						lo = math.MinInt64
					}
					note(pairKey{u, d.site, abi.OpUse}, u, ru, lg, d.obj, max(d.t-lg.at, 0), d.g, interval{lo, d.t})
				}
			}
		}
		// Inits of other goroutines in [τa, τa + δ).
		for _, in := range window(inits, lg.at, lg.at, a.delta) {
			work++
			is, ok := info[in.site]
			if !ok || in.g == lg.child || len(ru.byField[is.Field]) == 0 || !a.lateConcurrent(lg, in.g, in.clock) || !a.related(lg, in.g) {
				continue
			}
			for _, u := range ru.byField[is.Field] {
				if sameField(is, info[u]) {
					note(pairKey{in.site, u, abi.OpInit}, u, ru, lg, in.obj, in.t-lg.at, lg.child, interval{in.t - a.delta, in.t})
				}
			}
		}
	}
	if work > maxStaticWork {
		a.stats.warnf("static pairs: stopped after examining %d accesses near late goroutines", work)
	}
	if len(cands) == 0 {
		return 0, 0
	}
	list := make([]*staticCand, 0, len(cands))
	for _, c := range cands {
		list = append(list, c)
	}
	slices.SortFunc(list, func(x, y *staticCand) int {
		if x.reached != y.reached {
			if x.reached {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(x.dist, y.dist); c != 0 {
			return c
		}
		if c := cmp.Compare(x.how, y.how); c != 0 {
			return c
		}
		if c := cmp.Compare(x.k.first, y.k.first); c != 0 {
			return c
		}
		if c := cmp.Compare(x.k.second, y.k.second); c != 0 {
			return c
		}
		return cmp.Compare(x.k.kind, y.k.kind)
	})
	if len(list) > MaxStatic {
		left = len(list) - MaxStatic
		list = list[:MaxStatic]
	}
	if a.pairs == nil {
		a.pairs = make(map[pairKey]*pairAgg, len(list))
	}
	for _, c := range list {
		c.agg.static = true
		a.pairs[c.k] = c.agg
	}
	return len(list), left
}

// sortedRows returns the rows of the chunks sorted by time.
func sortedRows(chunks [][]checkRow) []checkRow {
	rows := slices.Concat(chunks...)
	slices.SortFunc(rows, func(x, y checkRow) int { return cmp.Compare(x.t, y.t) })
	return rows
}

// window returns the rows (sorted by time) with from ≤ τ and
// τ − at < delta (from ≤ at).
func window(rows []checkRow, from, at, delta int64) []checkRow {
	i, _ := slices.BinarySearchFunc(rows, from, func(r checkRow, t int64) int { return cmp.Compare(r.t, t) })
	j := i
	for j < len(rows) && (rows[j].t < at || inWindow(at, rows[j].t, delta)) {
		j++
	}
	return rows[i:j]
}
