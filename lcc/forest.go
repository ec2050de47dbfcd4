package lcc

import (
	"fmt"
	"sort"
)

// Forest is the fork forest of one run, rebuilt offline from its fork
// edges. It answers happens-before queries between events exactly as the
// fork vector clocks would (thesis §4.1):
//
//   - a goroutine's own entry is its counter, starting at 1;
//   - a child's vector clock at birth is its parent's vector clock at the
//     fork (the parent's own entry being the token's Clock), plus the
//     child's own entry 1;
//   - the parent's counter advances at the fork.
//
// With only fork edges, VC(e1) <= VC(e2) holds iff e1's goroutine is e2's
// goroutine or one of its ancestors, and e1's clock is at most the clock
// that goroutine had when it forked the branch leading to e2 (or e2's clock
// if it is the same goroutine). Forest answers that with an O(1) ancestor
// test (DFS entry/exit numbers) and an O(log depth) level-ancestor jump
// (skew-binary jump pointers), without building vectors.
//
// Goroutines that appear in no edge, or whose parent is unknown, are roots:
// their events are concurrent with every event of another tree.
// A Forest is immutable and safe for concurrent use.
type Forest struct {
	index map[uint64]int32
	nodes []node
}

type node struct {
	g      uint64
	parent int32  // -1 for roots
	clock  uint32 // parent's counter at the fork
	depth  int32
	jump   int32 // skew-binary jump pointer (itself for roots)
	tin    int32 // DFS entry number
	tout   int32 // DFS exit number: descendants have tin in (tin, tout]
}

// NewForest builds the forest of the given fork edges. It fails if a
// goroutine is forked twice with different parents or clocks, or if the
// edges form a cycle — neither can happen in a well-formed trace.
func NewForest(edges []Edge) (*Forest, error) {
	f := &Forest{index: make(map[uint64]int32, len(edges)+len(edges)/2)}
	id := func(g uint64) int32 {
		if i, ok := f.index[g]; ok {
			return i
		}
		i := int32(len(f.nodes))
		f.index[g] = i
		f.nodes = append(f.nodes, node{g: g, parent: -1})
		return i
	}
	for _, e := range edges {
		if e.Parent == e.Child {
			return nil, fmt.Errorf("lcc: fork edge %d -> %d: goroutine forks itself", e.Parent, e.Child)
		}
		p, c := id(e.Parent), id(e.Child)
		n := &f.nodes[c]
		if n.parent >= 0 {
			if n.parent == p && n.clock == e.Clock {
				continue // duplicate edge
			}
			return nil, fmt.Errorf("lcc: goroutine %d forked twice: by %d at clock %d and by %d at clock %d",
				e.Child, f.nodes[n.parent].g, n.clock, e.Parent, e.Clock)
		}
		n.parent, n.clock = p, e.Clock
	}
	// Children lists in CSR form, then an iterative DFS from every root.
	cnt := make([]int32, len(f.nodes)+1)
	for i := range f.nodes {
		if p := f.nodes[i].parent; p >= 0 {
			cnt[p+1]++
		}
	}
	for i := 1; i < len(cnt); i++ {
		cnt[i] += cnt[i-1]
	}
	kids := make([]int32, cnt[len(cnt)-1])
	fill := append([]int32(nil), cnt[:len(f.nodes)]...)
	for i := range f.nodes {
		if p := f.nodes[i].parent; p >= 0 {
			kids[fill[p]] = int32(i)
			fill[p]++
		}
	}
	next := fill // reused: next child position per node, starting at cnt[i]
	copy(next, cnt[:len(f.nodes)])
	var (
		timer   int32
		visited int
		stack   []int32
	)
	for r := range f.nodes {
		if f.nodes[r].parent >= 0 {
			continue
		}
		root := &f.nodes[r]
		root.jump = int32(r)
		timer++
		root.tin = timer
		visited++
		stack = append(stack[:0], int32(r))
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			if next[v] < cnt[v+1] {
				c := kids[next[v]]
				next[v]++
				cn, pn := &f.nodes[c], &f.nodes[v]
				cn.depth = pn.depth + 1
				// Skew-binary jump pointers (Myers 1983).
				j := f.nodes[pn.jump]
				if pn.depth-f.nodes[pn.jump].depth == f.nodes[pn.jump].depth-f.nodes[j.jump].depth {
					cn.jump = j.jump
				} else {
					cn.jump = v
				}
				timer++
				cn.tin = timer
				visited++
				stack = append(stack, c)
				continue
			}
			f.nodes[v].tout = timer
			stack = stack[:len(stack)-1]
		}
	}
	if visited != len(f.nodes) {
		var cyc []uint64
		for i := range f.nodes {
			if f.nodes[i].tin == 0 {
				cyc = append(cyc, f.nodes[i].g)
			}
		}
		sort.Slice(cyc, func(i, j int) bool { return cyc[i] < cyc[j] })
		if len(cyc) > 8 {
			cyc = cyc[:8]
		}
		return nil, fmt.Errorf("lcc: fork edges form a cycle through goroutines %v", cyc)
	}
	return f, nil
}

// Len returns the number of goroutines the forest knows.
func (f *Forest) Len() int { return len(f.nodes) }

// Parent returns the fork token that started g: its parent and the
// parent's counter at the fork. ok is false for roots and unknown
// goroutines.
func (f *Forest) Parent(g uint64) (t Token, ok bool) {
	i, found := f.index[g]
	if !found || f.nodes[i].parent < 0 {
		return Token{}, false
	}
	n := &f.nodes[i]
	return Token{Parent: f.nodes[n.parent].g, Clock: n.clock}, true
}

// Depth returns the number of ancestors of g (0 for roots and unknown
// goroutines).
func (f *Forest) Depth(g uint64) int {
	if i, ok := f.index[g]; ok {
		return int(f.nodes[i].depth)
	}
	return 0
}

// HappensBefore reports whether a happens before b by the fork vector
// clocks: VC(a) <= VC(b) and a != b. Events of the same goroutine are
// ordered by their clocks; two events of one goroutine with the same clock
// (no fork between them) are neither before nor after each other here —
// program order between them is a matter of time, not of the clocks.
func (f *Forest) HappensBefore(a, b Event) bool {
	if a.G == b.G {
		return a.Clock < b.Clock
	}
	ai, ok := f.index[a.G]
	if !ok {
		return false
	}
	bi, ok := f.index[b.G]
	if !ok {
		return false
	}
	an, bn := &f.nodes[ai], &f.nodes[bi]
	if bn.tin <= an.tin || bn.tin > an.tout {
		return false // a's goroutine is not a proper ancestor of b's
	}
	// The clock a's goroutine had when it forked the branch leading to b is
	// the fork clock of b's ancestor at depth(a)+1.
	c := f.ancestorAt(bi, an.depth+1)
	return a.Clock <= f.nodes[c].clock
}

// ancestorAt returns the ancestor of node i at depth d <= depth(i).
func (f *Forest) ancestorAt(i, d int32) int32 {
	for f.nodes[i].depth > d {
		n := &f.nodes[i]
		if f.nodes[n.jump].depth >= d {
			i = n.jump
		} else {
			i = n.parent
		}
	}
	return i
}

// Concurrent reports whether a and b are unordered by the fork vector
// clocks. Events of the same goroutine are never concurrent (program
// order).
func (f *Forest) Concurrent(a, b Event) bool {
	if a.G == b.G {
		return false
	}
	return !f.HappensBefore(a, b) && !f.HappensBefore(b, a)
}
