package analyze

import (
	"fmt"

	"github.com/memorder/wafl/lcc"
)

// forest collects the trace's fork edges during pass 1, in the trace's
// order, and then builds the lcc.Forest that answers the fork
// happens-before question of the WAFL thesis §4.1 for the exact passes.
// Goroutines with no known parent are concurrent with every other
// goroutine.
type forest struct {
	edges  []lcc.Edge
	parent map[uint64]struct{} // children already given a parent
	f      *lcc.Forest
	dupes  int // fork rows naming an already-forked child or the parent itself
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
