package analyze

import (
	"fmt"

	"github.com/memorder/wafl/lcc"
)

// forest collects the trace's fork edges during pass 1 and then answers
// the fork happens-before question of the WAFL thesis §4.1 through
// lcc.Forest. Goroutines with no known parent are concurrent with every
// other goroutine.
type forest struct {
	edges  []lcc.Edge
	parent map[uint64]struct{} // children already given a parent
	f      *lcc.Forest
	dupes  int // fork rows naming an already-forked child or the parent itself

	// one-entry cache: consecutive instances mostly repeat the same query
	lastQ [2]lcc.Event
	lastR bool
	haveQ bool
}

func newForest() *forest {
	return &forest{parent: make(map[uint64]struct{})}
}

// add records that parent started child at parent's counter clock. The
// first edge of a child wins; later ones are counted as malformed.
func (f *forest) add(parent, child uint64, clock uint32) {
	if _, ok := f.parent[child]; ok || parent == child {
		f.dupes++
		return
	}
	f.parent[child] = struct{}{}
	f.edges = append(f.edges, lcc.Edge{Parent: parent, Clock: clock, Child: child})
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

// concurrent reports whether two events of different goroutines are
// unordered by forks.
func (f *forest) concurrent(g1 uint64, c1 uint32, g2 uint64, c2 uint32) bool {
	q := [2]lcc.Event{{G: g1, Clock: c1}, {G: g2, Clock: c2}}
	if f.haveQ && f.lastQ == q {
		return f.lastR
	}
	r := f.f.Concurrent(q[0], q[1])
	f.lastQ, f.lastR, f.haveQ = q, r, true
	return r
}
