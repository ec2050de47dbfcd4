package analyze

import (
	"math"
	"sort"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/lcc"
)

// pairer finds the pair instances and aggregates them per candidate pair,
// with its caches and counters; the analysis merges them afterwards. The
// exact passes feed it uses against an object index (batch, pass 2), the
// streaming pass feeds it instances as they arrive (instance). (A pair
// pass split between two pairers by object hash was measured slower on
// two cores, in three designs: docs/benchmarks-analyze.md.)
type pairer struct {
	delta int64
	index *objIndex // pass 2: the lifecycle events of the current group
	look  lookCache
	// forks answers fork order: the trace's forest in pass 2, the edges
	// so far when streaming.
	forks *lcc.Forest
	pairs map[pairKey]*pairAgg
	// pcache: a direct-mapped cache in front of pairs, indexed by the top
	// bits of a hash (pshift = 64 − log2(len)); it starts at 64 slots and
	// grows to 1<<13 when its misses show many pairs (most traces have a
	// handful).
	pcache  []pairSlot
	pshift  uint8
	pmisses int
	// wins, if not nil, takes the interference windows of the instances
	// per (ℓ1, goroutine) instead of the aggregates (pairAgg.ivs).
	wins *winTable

	instances, prunedWindow, prunedSameG, prunedFork int64
	noFork                                           bool // keep fork-ordered instances (ablation)
}

type pairSlot struct {
	k pairKey
	p *pairAgg
}

// pairKey is a candidate pair {ℓ1, ℓ2} of one kind.
type pairKey struct {
	first, second uint32
	kind          abi.Op // OpInit: use-before-init, OpUse: use-after-dispose
}

type pairAgg struct {
	count          int64
	minGap, maxGap int64
	obj            uint64
	// windows of ℓ2's goroutines, for the interference pass, unless the
	// pairer keeps them in its winTable; a pair mostly has few partner
	// goroutines, so a slice with a hint beats a map, and the map (at) is
	// built only for a pair with more than windowScan of them (a test
	// that starts thousands of goroutines doing the same thing).
	ivs  []gWindows
	hint int
	at   map[uint64]int32 // goroutine -> index into ivs, past windowScan
	// the pairer's winTable ids+1 of (first, g) for the goroutines g of
	// the pair's latest windows (0: none), replaced round robin: a
	// dispose pairs with many uses in a row, all with the disposing
	// goroutine's window, and the uses of an init come from the few
	// goroutines of one role
	winID   [winWays]int32
	winG    [winWays]uint64
	winNext uint8
	// predicted: the pair was predicted for a late goroutine
	// (predict.go), not seen in the trace; static: it pairs a site a
	// late goroutine may reach with an access of the trace (static.go)
	predicted, static bool
	// mirror marks a check-then-act pair (ℓ2 → ℓ1) made from an instance
	// (ℓ1 → ℓ2) of two different check sites (checkact.go).
	mirror bool
}

// winWays is how many (goroutine, window key) pairs a pairAgg remembers.
const winWays = 8

type gWindows struct {
	g uint64
	l ivList
}

type ivList struct {
	cur  interval
	done []interval
}

type interval struct{ lo, hi int64 } // closed

// inWindow reports whether 0 ≤ t2 − t1 < delta without overflow.
func inWindow(t1, t2, delta int64) bool {
	return t2 >= t1 && uint64(t2)-uint64(t1) < uint64(delta)
}

// add merges iv into the current interval when they overlap, and
// otherwise retires the current one.
func (l *ivList) add(iv interval) {
	if iv.lo <= l.cur.hi && iv.hi >= l.cur.lo {
		l.cur.lo = min(l.cur.lo, iv.lo)
		l.cur.hi = max(l.cur.hi, iv.hi)
		return
	}
	l.done = append(l.done, l.cur)
	l.cur = iv
}

func newPairer(delta int64, forks *lcc.Forest) *pairer {
	return &pairer{delta: delta, forks: forks, pairs: make(map[pairKey]*pairAgg)}
}

// pass2 pairs every use with its object's lifecycle events:
//
//   - init→use: the most recent lifecycle event at or before the use, if it
//     is an init (a dispose in between means the init no longer matters);
//   - use→dispose: the first dispose at or after the use within δ.
//
// Each instance is kept if 0 ≤ τ2 − τ1 < δ, the goroutines differ and the
// events are concurrent by forks. The lifecycle events come from store,
// one group of partitions at a time; replay reads the uses again for each.
func (a *analysis) pass2(store *lifecycleStore, replay func(pass string, fn func(*trace.Batch)) error) error {
	groups, err := store.finish()
	if err != nil {
		return err
	}
	a.stats.Partitions = len(groups)
	p := newPairer(a.delta, a.forest.f)
	p.noFork = a.noFork
	p.wins = newWinTable()
	for _, g := range groups {
		ev, err := store.load(g)
		if err != nil {
			return err
		}
		p.index, p.look = buildIndex(ev), lookCache{}
		a.stats.Objects += int64(p.index.objects())
		full := g == ^uint64(0)
		if err := replay("pass 2 (pairs)", func(c *trace.Batch) { p.batch(c, g, full) }); err != nil {
			return err
		}
		p.index = nil
	}
	store.close()
	a.mergePairer(p)
	return nil
}

// batch handles the uses of one batch that belong to this pairer.
func (p *pairer) batch(c *trace.Batch, mask uint64, full bool) {
	n := c.Len()
	for i, op := range c.Op[:n] {
		if abi.Op(op) != abi.OpUse {
			continue
		}
		site := c.Site[i]
		if !validSite(site) {
			continue
		}
		obj := c.Obj[i]
		if !full && mask&(1<<partition(obj)) == 0 {
			continue
		}
		ev, nd := p.index.lookup(obj, &p.look)
		if ev == nil {
			continue
		}
		t := c.Time[i]
		// k: first lifecycle event later than t.
		k := len(ev)
		if ev[len(ev)-1].time <= t {
			// common case for long-lived objects: all before
		} else if ev[0].time > t {
			k = 0
		} else {
			k = sort.Search(len(ev), func(j int) bool { return ev[j].time > t })
		}
		if k > 0 && ev[k-1].op == abi.OpInit {
			e := &ev[k-1]
			p.instance(pairKey{e.site, site, abi.OpInit}, obj, e.time, e.g, e.clock, t, c.G[i], c.Clock[i])
		}
		// First dispose at or after t.
		j := k
		if j > 0 && ev[j-1].time == t {
			j = sort.Search(k, func(x int) bool { return ev[x].time >= t })
		}
		if j < len(ev) {
			if d := int(nd[j]); d < len(ev) {
				e := &ev[d]
				if inWindow(t, e.time, p.delta) {
					p.instance(pairKey{site, e.site, abi.OpUse}, obj, t, c.G[i], c.Clock[i], e.time, e.g, e.clock)
				} else {
					p.prunedWindow++
				}
			}
		}
	}
}

// instance examines one dynamic pair instance: ℓ1 at (t1, g1, c1) and ℓ2
// at (t2, g2, c2), t1 ≤ t2.
func (p *pairer) instance(k pairKey, obj uint64, t1 int64, g1 uint64, c1 uint32, t2 int64, g2 uint64, c2 uint32) {
	if !inWindow(t1, t2, p.delta) {
		p.prunedWindow++
		return
	}
	if g1 == g2 {
		p.prunedSameG++
		return
	}
	if !p.noFork && !p.forks.Concurrent(lcc.Event{G: g1, Clock: c1}, lcc.Event{G: g2, Clock: c2}) {
		p.prunedFork++
		return
	}
	p.instances++
	gap := t2 - t1
	ph := uint64(k.first)*0x9E3779B97F4A7C15 ^ uint64(k.second)*0xC2B2AE3D27D4EB4F ^ uint64(k.kind)
	var agg *pairAgg
	if i := ph >> p.pshift; i < uint64(len(p.pcache)) && p.pcache[i].k == k {
		agg = p.pcache[i].p
	}
	if agg == nil {
		agg = p.pairs[k]
		if agg == nil {
			agg = &pairAgg{minGap: gap, maxGap: gap, obj: obj}
			p.pairs[k] = agg
		}
		p.pmisses++
		if p.pcache == nil || p.pmisses > 2*len(p.pcache) && len(p.pcache) < 1<<13 {
			bits := uint8(6)
			if p.pcache != nil {
				bits = min(64-p.pshift+3, 13)
			}
			p.pcache, p.pshift, p.pmisses = make([]pairSlot, 1<<bits), 64-bits, 0
		}
		p.pcache[ph>>p.pshift] = pairSlot{k, agg}
	}
	agg.count++
	agg.minGap = min(agg.minGap, gap)
	if gap > agg.maxGap || gap == agg.maxGap && obj < agg.obj {
		// The example object is the one of the largest gap (smallest
		// object on ties), independent of the order of the trace.
		agg.maxGap, agg.obj = gap, obj
	}

	// Interference window of this instance: ℓ2's goroutine, [t1 − δ, t2].
	lo := t1 - p.delta
	if lo > t1 { // overflow
		lo = math.MinInt64
	}
	if p.wins != nil {
		for w := range winWays {
			if agg.winG[w] == g2 && agg.winID[w] != 0 {
				p.wins.addID(agg.winID[w]-1, interval{lo, t2})
				return
			}
		}
		w := agg.winNext % winWays
		agg.winNext++
		agg.winID[w], agg.winG[w] = p.wins.add(k.first, g2, interval{lo, t2})+1, g2
		return
	}
	agg.window(g2, interval{lo, t2})
}

// windowScan is the most partner goroutines of a pair that window finds
// by scanning its slice.
const windowScan = 32

// window adds a window of goroutine g to the pair.
func (agg *pairAgg) window(g uint64, iv interval) {
	if h := agg.hint; h < len(agg.ivs) && agg.ivs[h].g == g {
		agg.ivs[h].l.add(iv)
		return
	}
	if agg.at != nil {
		if i, ok := agg.at[g]; ok {
			agg.hint = int(i)
			agg.ivs[i].l.add(iv)
			return
		}
	} else {
		for i := range agg.ivs {
			if agg.ivs[i].g == g {
				agg.hint = i
				agg.ivs[i].l.add(iv)
				return
			}
		}
	}
	agg.ivs = append(agg.ivs, gWindows{g: g, l: ivList{cur: iv}})
	agg.hint = len(agg.ivs) - 1
	switch {
	case agg.at != nil:
		agg.at[g] = int32(agg.hint)
	case len(agg.ivs) > windowScan:
		agg.at = make(map[uint64]int32, 2*len(agg.ivs))
		for i := range agg.ivs {
			agg.at[agg.ivs[i].g] = int32(i)
		}
	}
}
