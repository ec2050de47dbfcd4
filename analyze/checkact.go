package analyze

import (
	"cmp"
	"slices"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

// Check-then-act pairs (docs/algorithm.md, "Check-then-act pairs"):
// wafl's extension of the thesis's two pair kinds. Goroutine g1 checks
// whether an object was disposed (check row c1, at ℓ1), finds it was not
// and disposes something (a dispose row of g1 after c1); goroutine g2
// checks the same object shortly after (c2, at ℓ2), finds it disposed and
// leaves it alone. Had g2 checked before g1's dispose, both would dispose:
// close of a closed channel, or a use of what g1 disposed. The pair is
// (ℓ1 → ℓ2); the delay goes after ℓ1 (check events come after the
// check), so that g2 checks first.
//
// For each check c2 = (τ2, g2, obj k): the latest check c1 = (τ1, g1) of k
// by each other goroutine g1 with 0 ≤ τ2 − τ1 < δ, such that g1 has a
// dispose row in [τ1, τ2] (it acted on its check before g2 checked). The
// instance then passes the thesis's checks (window, goroutines, fork
// order: pairer.instance), with gap τ2 − τ1 for the delay length and the
// interference window [τ1 − δ, τ2] of g2.

// checkRow is one check or dispose row kept for the check-then-act pass
// (and the predicted partners, predict.go).
type checkRow struct {
	t     int64
	g     uint64
	obj   uint64
	clock uint32
	site  uint32
}

// checkRows keeps the check rows and the dispose rows of pass 1, up to a
// share of the memory budget (40 B a row); beyond it, rows are dropped and
// counted. The dispose rows go to fixed-size chunks, in arrival order, so
// that a trace with many disposes and no checks (the common case) does not
// copy them again and again as they accumulate.
type checkRows struct {
	checks   []checkRow
	disposes [][]checkRow // chunks of up to dispChunk rows
	// inits, kept only for static pairs (keepInits), like disposes
	inits     [][]checkRow
	keepInits bool
	ndisp     int // dispose and init rows
	limit     int
	dropped   int64
}

// gTime is a dispose row as actsOn needs it, sorted by goroutine and time.
type gTime struct {
	g    uint64
	t    int64
	site uint32
}

const dispChunk = 1 << 14

// maxCheckWalk bounds the earlier checks of the same object one check
// examines (a hot check in a loop would otherwise make the pass
// quadratic).
const maxCheckWalk = 64

func newCheckRows(budget int64) *checkRows {
	return &checkRows{limit: int(max(budget/8/40, 1024))}
}

// batch keeps the check and dispose rows of c with a valid site.
func (r *checkRows) batch(c *trace.Batch) {
	n := c.Len()
	for i, op := range c.Op[:n] {
		op := abi.Op(op)
		if (op != abi.OpCheck && op != abi.OpDispose && (op != abi.OpInit || !r.keepInits)) || !validSite(c.Site[i]) {
			continue
		}
		if len(r.checks)+r.ndisp >= r.limit {
			r.dropped++
			continue
		}
		row := checkRow{t: c.Time[i], g: c.G[i], obj: c.Obj[i], clock: c.Clock[i], site: c.Site[i]}
		switch op {
		case abi.OpCheck:
			r.checks = append(r.checks, row)
		case abi.OpDispose:
			r.disposes = appendChunked(r.disposes, row)
			r.ndisp++
		default:
			r.inits = appendChunked(r.inits, row)
			r.ndisp++
		}
	}
}

// appendChunked appends row to the last chunk, starting a new one when
// it is full: the first of 64 rows, each next one four times larger up
// to dispChunk.
func appendChunked(chunks [][]checkRow, row checkRow) [][]checkRow {
	k := len(chunks) - 1
	if k < 0 || len(chunks[k]) == cap(chunks[k]) {
		n := 64
		if k >= 0 {
			n = min(4*cap(chunks[k]), dispChunk)
		}
		chunks = append(chunks, make([]checkRow, 0, n))
		k++
	}
	chunks[k] = append(chunks[k], row)
	return chunks
}

// checkPairs adds the check-then-act pairs to a.pairs (after the
// strategy's pairs, with the fork forest built).
func (a *analysis) checkPairs(info map[uint32]SiteInfo) {
	r := a.checks
	if r == nil || len(r.checks) == 0 || r.ndisp == 0 {
		return
	}
	if r.dropped > 0 {
		a.stats.warnf("check-then-act: %d check and dispose rows beyond the memory budget were not examined", r.dropped)
	}
	slices.SortFunc(r.checks, func(x, y checkRow) int {
		if x.obj != y.obj {
			return cmp.Compare(x.obj, y.obj)
		}
		return cmp.Compare(x.t, y.t)
	})
	disp := make([]gTime, 0, r.ndisp)
	dobj := make([]checkRow, 0, r.ndisp)
	for _, c := range r.disposes {
		for _, d := range c {
			disp = append(disp, gTime{g: d.g, t: d.t, site: d.site})
			dobj = append(dobj, d)
		}
	}
	r.disposes = nil
	slices.SortFunc(disp, cmpGTime)
	slices.SortFunc(dobj, func(x, y checkRow) int {
		if x.obj != y.obj {
			return cmp.Compare(x.obj, y.obj)
		}
		return cmp.Compare(x.t, y.t)
	})
	p := newPairer(a.delta, a.forest.f)
	// m takes the mirrored instances: (ℓ2 → ℓ1) for an instance of two
	// different check sites, with the same gap and the window of g1 over
	// [τ1 − δ, τ2] (g1's check and act, and what g1 ran before them).
	m := newPairer(a.delta, a.forest.f)
	var seen []uint64
	var acts []uint32
	cs := r.checks
	for j := range cs {
		// A stale check: the first dispose of the checked object at or
		// after the check, within δ, is another goroutine's. The delay
		// after the check lets that dispose come first, and the checking
		// goroutine goes on with what its check saw.
		c1 := &cs[j]
		k, _ := slices.BinarySearchFunc(dobj, checkRow{obj: c1.obj, t: c1.t}, func(x, y checkRow) int {
			if x.obj != y.obj {
				return cmp.Compare(x.obj, y.obj)
			}
			return cmp.Compare(x.t, y.t)
		})
		if k < len(dobj) && dobj[k].obj == c1.obj && dobj[k].g != c1.g && inWindow(c1.t, dobj[k].t, a.delta) {
			d := &dobj[k]
			p.instance(pairKey{c1.site, d.site, abi.OpCheck}, c1.obj, c1.t, c1.g, c1.clock, d.t, d.g, d.clock)
		}
	}
	for j := range cs {
		c2 := &cs[j]
		seen = seen[:0]
		for i, steps := j-1, 0; i >= 0 && steps < maxCheckWalk; i, steps = i-1, steps+1 {
			c1 := &cs[i]
			if c1.obj != c2.obj || !inWindow(c1.t, c2.t, a.delta) {
				break
			}
			if c1.g == c2.g || slices.Contains(seen, c1.g) {
				continue
			}
			seen = append(seen, c1.g)
			if acts = actsOn(dobj, disp, c2.obj, c1.g, c1.t, c2.t, acts[:0]); len(acts) > 0 {
				if atomicAct(info, c1.site, c2.site, acts) {
					a.stats.PrunedAtomic++
					continue
				}
				p.instance(pairKey{c1.site, c2.site, abi.OpCheck}, c2.obj, c1.t, c1.g, c1.clock, c2.t, c2.g, c2.clock)
				if c1.site != c2.site {
					m.instance(pairKey{c2.site, c1.site, abi.OpCheck}, c2.obj, c1.t, c2.g, c2.clock, c2.t, c1.g, c1.clock)
				}
			}
		}
	}
	a.stats.Instances += p.instances
	a.stats.PrunedSameG += p.prunedSameG
	a.stats.PrunedFork += p.prunedFork
	if a.pairs == nil {
		a.pairs = make(map[pairKey]*pairAgg, len(p.pairs))
	}
	for k, v := range p.pairs {
		a.pairs[k] = v
	}
	for k, v := range m.pairs {
		if _, ok := a.pairs[k]; !ok { // seen in this order too: the observed pair stands
			v.mirror = true
			a.pairs[k] = v
			a.stats.Mirrored++
		}
	}
	r.checks = nil
}

// actsOn returns (appended to out) the sites of the dispose rows by
// which goroutine g acted on its check of obj in [lo, hi]: its disposes of
// obj itself there, when the trace has dispose rows of obj (a channel, a
// map entry, a state field: an isClosed() select on a done channel that
// every Add and Remove passes is no act on the channel when they go on to
// delete something else — the second checker finds the channel as open
// as the first did); else, for a check of an object that is never
// disposed (a flag, set before its goroutine closes something), all of
// g's dispose rows there. dobj is sorted by (obj, t), disp by (g, t).
func actsOn(dobj []checkRow, disp []gTime, obj, g uint64, lo, hi int64, out []uint32) []uint32 {
	i, _ := slices.BinarySearchFunc(dobj, checkRow{obj: obj, t: lo}, func(x, y checkRow) int {
		if x.obj != y.obj {
			return cmp.Compare(x.obj, y.obj)
		}
		return cmp.Compare(x.t, y.t)
	})
	if (i == len(dobj) || dobj[i].obj != obj) && (i == 0 || dobj[i-1].obj != obj) {
		j, _ := slices.BinarySearchFunc(disp, gTime{g: g, t: lo}, cmpGTime)
		for ; j < len(disp) && disp[j].g == g && disp[j].t <= hi && len(out) < maxActs; j++ {
			out = append(out, disp[j].site)
		}
		return out
	}
	for ; i < len(dobj) && dobj[i].obj == obj && dobj[i].t <= hi && len(out) < maxActs; i++ {
		if dobj[i].g == g {
			out = append(out, dobj[i].site)
		}
	}
	return out
}

// maxActs bounds the dispose rows actsOn returns: enough to tell that a
// goroutine acted, and whether all its acts were in one critical section.
const maxActs = 16

// atomicAct reports whether the check at ℓ1 and the acts after it are one
// critical section of an exclusive lock that the check at ℓ2 takes too
// (removePath's `wd, ok := w.path[path]` and its deletes between
// w.mu.Lock() and the deferred Unlock, against updatePath's lookup under
// w.mu): ℓ2 cannot come between them, and a delay after ℓ1 only holds the
// lock. Such an instance is no near miss.
func atomicAct(info map[uint32]SiteInfo, l1, l2 uint32, acts []uint32) bool {
	c1, c2 := info[l1], info[l2]
	if !c1.Excl || c1.Section == "" || c2.Lock != c1.Lock || len(acts) == maxActs {
		return false // (acts cut short: the others are not known to be in the section)
	}
	for _, s := range acts {
		if info[s].Section != c1.Section {
			return false
		}
	}
	return true
}

func cmpGTime(x, y gTime) int {
	if x.g != y.g {
		return cmp.Compare(x.g, y.g)
	}
	return cmp.Compare(x.t, y.t)
}
