package analyze

import (
	"fmt"

	"github.com/memorder/wafl/lcc"
)

// forest collects the trace's fork edges during pass 1 and then answers
// the fork happens-before question of the WAFL thesis §4.1 through
// lcc.Forest (its Parent and Depth; the reference tests check the result
// against lcc.Forest.Concurrent). Goroutines with no known parent are
// concurrent with every other goroutine.
type forest struct {
	edges  []lcc.Edge
	parent map[uint64]struct{} // children already given a parent
	f      *lcc.Forest
	dupes  int // fork rows naming an already-forked child or the parent itself

}

// forestView answers fork-order queries for one goroutine of the analysis:
// lcc.Forest is immutable and shared, the cache in front of it is not.
type forestView struct {
	f     *lcc.Forest
	cache [1 << 12]limitSlot // see limit
}

func newForest() *forest {
	return &forest{parent: make(map[uint64]struct{})}
}

// add records that parent started child at parent's counter clock. The
// first edge of a child wins; later ones are counted as malformed.
// It reports whether the edge was kept.
func (f *forest) add(parent, child uint64, clock uint32) bool {
	if _, ok := f.parent[child]; ok || parent == child {
		f.dupes++
		return false
	}
	f.parent[child] = struct{}{}
	f.edges = append(f.edges, lcc.Edge{Parent: parent, Clock: clock, Child: child})
	return true
}

// build turns the edges into an lcc.Forest.
func (f *forest) build() error {
	lf, err := lcc.NewForest(f.edges)
	if err != nil {
		return fmt.Errorf("malformed fork edges: %w", err)
	}
	f.f, f.edges, f.parent = lf, nil, nil
	return nil
}

func (f *forest) goroutines() int { return f.f.Len() }

// limit returns the counter anc had when it forked the branch leading to
// desc, or -1 when anc is not a proper ancestor of desc, so that
// (anc, c) happens before any event of desc iff c ≤ limit. Results are
// kept in a direct-mapped cache.
func (f *forestView) limit(anc, desc uint64) int64 {
	h := (anc*0x9E3779B97F4A7C15 ^ desc*0xC2B2AE3D27D4EB4F) >> 52
	s := &f.cache[h]
	if s.ok && s.anc == anc && s.desc == desc {
		return s.lim
	}
	lim := int64(-1)
	// Walk up from desc; depth bounds the walk (the forest has no cycles).
	x := desc
	for steps := f.f.Depth(desc); steps > 0; steps-- {
		t, ok := f.f.Parent(x)
		if !ok {
			break
		}
		if t.Parent == anc {
			lim = int64(t.Clock)
			break
		}
		x = t.Parent
	}
	*s = limitSlot{anc: anc, desc: desc, lim: lim, ok: true}
	return lim
}

type limitSlot struct {
	anc, desc uint64
	lim       int64
	ok        bool
}

// concurrent reports whether two events of different goroutines are
// unordered by forks (lcc.Forest.Concurrent, with the ancestor lookups
// cached).
func (f *forestView) concurrent(g1 uint64, c1 uint32, g2 uint64, c2 uint32) bool {
	if g1 == g2 {
		return false
	}
	return int64(c1) > f.limit(g1, g2) && int64(c2) > f.limit(g2, g1)
}
