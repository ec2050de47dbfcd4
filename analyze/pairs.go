package analyze

import (
	"math"
	"sort"

	"github.com/memorder/wafl/lcc"
)

// pairer runs the pair pass with its aggregates, caches and counters;
// Run merges them into the analysis afterwards. The object index and the
// fork forest it reads are immutable during the pass. (A pair pass split
// between two pairers by object hash was measured slower on two cores: the
// per-batch barrier and the doubled aggregates cost more than the second
// core gave while a third goroutine decodes.)
type pairer struct {
	delta  int64
	index  *objIndex
	look   lookCache
	fv     forestView
	inc    *incForest // set when streaming in pass 1: fork order from the edges so far
	pairs  map[pairKey]*pairAgg
	pcache [1 << 13]pairSlot // direct-mapped cache in front of pairs

	instances, prunedWindow, prunedSameG, prunedFork int64
}

func newPairer(delta int64, f *lcc.Forest) *pairer {
	return &pairer{delta: delta, fv: forestView{f: f}, pairs: make(map[pairKey]*pairAgg)}
}

// pass2 pairs every use with its object's lifecycle events:
//
//   - init→use: the most recent lifecycle event at or before the use, if it
//     is an init (a dispose in between means the init no longer matters);
//   - use→dispose: the first dispose at or after the use within δ.
//
// Each instance is kept if 0 ≤ τ2 − τ1 < δ, the goroutines differ and the
// events are concurrent by forks.
func (a *analysis) pass2(p *pairer) error {
	full := a.mask == ^uint64(0)
	p.index, p.look = a.index, lookCache{}
	return a.rescan("pass 2 (pairs)", func(c *Columns) { p.batch(c, a.mask, full) })
}

// batch handles the uses of one batch that belong to this pairer.
func (p *pairer) batch(c *Columns, mask uint64, full bool) {
	n := c.Len()
	for i, op := range c.Op[:n] {
		if op != opUse {
			continue
		}
		site := c.Site[i]
		if site == 0 || site > maxSite {
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
		if k > 0 && ev[k-1].op == opInit {
			e := &ev[k-1]
			p.instance(pairKey{e.site, site, opInit}, obj, e.time, e.g, e.clock, t, c.G[i], c.Clock[i])
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
					p.instance(pairKey{site, e.site, opUse}, obj, t, c.G[i], c.Clock[i], e.time, e.g, e.clock)
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
	if p.inc != nil {
		if !p.inc.concurrent(g1, c1, g2, c2) {
			p.prunedFork++
			return
		}
	} else if !p.fv.concurrent(g1, c1, g2, c2) {
		p.prunedFork++
		return
	}
	p.instances++
	gap := t2 - t1
	ph := (uint64(k.first)*0x9E3779B97F4A7C15 ^ uint64(k.second)*0xC2B2AE3D27D4EB4F ^ uint64(k.kind)) >> 51
	ps := &p.pcache[ph]
	agg := ps.p
	if agg == nil || ps.k != k {
		agg = p.pairs[k]
		if agg == nil {
			agg = &pairAgg{minGap: gap, maxGap: gap, obj: obj}
			p.pairs[k] = agg
		}
		*ps = pairSlot{k, agg}
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
	agg.window(g2, interval{lo, t2})
}

// window adds a window of goroutine g to the pair.
func (agg *pairAgg) window(g uint64, iv interval) {
	if h := agg.hint; h < len(agg.ivs) && agg.ivs[h].g == g {
		agg.ivs[h].l.add(iv)
		return
	}
	for i := range agg.ivs {
		if agg.ivs[i].g == g {
			agg.hint = i
			agg.ivs[i].l.add(iv)
			return
		}
	}
	agg.ivs = append(agg.ivs, gWindows{g: g, l: ivList{cur: iv}})
	agg.hint = len(agg.ivs) - 1
}

// mergePairer moves the pairer's aggregates and counters into a.
func (a *analysis) mergePairer(p *pairer) {
	a.stats.Instances += p.instances
	a.stats.PrunedWindow += p.prunedWindow
	a.stats.PrunedSameG += p.prunedSameG
	a.stats.PrunedFork += p.prunedFork
	a.pairs, p.pairs = p.pairs, nil
}
