package lcc

import (
	"errors"
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
// if it is the same goroutine). Forest answers that by walking up from
// e2's goroutine to e1's, without building vectors, and keeps the answers
// of (ancestor, descendant) pairs in a direct-mapped cache: an analysis
// asks about the same few pairs of goroutines millions of times.
//
// Goroutines that appear in no edge, or whose parent is unknown, are roots:
// their events are concurrent with every event of another tree.
//
// A Forest is built at once from all edges (NewForest) or grows edge by
// edge while it answers queries (Add), as a streaming analysis needs: its
// answers are those of the edges added so far, and Add refuses an edge
// that could change an answer already given; the zero Forest is empty,
// ready to grow. Queries fill the cache, so a Forest is not safe for
// concurrent use.
type Forest struct {
	index map[uint64]int32
	nodes []node
	// asked holds goroutines the forest does not know that a query took
	// to be roots (known ones are marked in their node).
	asked map[uint64]struct{}
	// cache: direct-mapped answers of limit, indexed by the top bits of
	// a hash (shift = 64 − log2(len)). It starts small and grows when
	// its misses show that the forest is asked a lot (growCache): most
	// traces are of short tests and ask a few dozen questions.
	cache  []limitSlot
	shift  uint8
	misses int
}

// The cache's first and largest sizes (slots of 24 bytes).
const (
	minCacheBits = 6
	maxCacheBits = 14
)

type node struct {
	g      uint64
	parent int32  // -1 for roots
	clock  uint32 // parent's counter at the fork
	// up leads towards the root of the node's tree: union-find links
	// with path halving, for refusing edges that would close a cycle.
	up       int32
	answered bool // a query took this root to be the top of its tree
}

// limitSlot is a cached answer of limit; the empty slot's (0, 0) is
// never asked (anc ≠ desc).
type limitSlot struct {
	anc, desc uint64
	lim       int64
}

// Errors of Add. Each leaves the forest unchanged.
var (
	// ErrForkedTwice: the child already has a parent.
	ErrForkedTwice = errors.New("lcc: goroutine forked twice")
	// ErrAnswered: a query already took the child to be a root; with the
	// edge its answer could have been different.
	ErrAnswered = errors.New("lcc: fork edge of a goroutine already taken to be a root")
	// ErrCycle: the edge would close a cycle (a goroutine forking itself
	// or one of its ancestors).
	ErrCycle = errors.New("lcc: fork edges form a cycle")
)

// NewForest builds the forest of the given fork edges. It fails if a
// goroutine is forked twice with different parents or clocks, or if the
// edges form a cycle — neither can happen in a well-formed trace.
func NewForest(edges []Edge) (*Forest, error) {
	f := &Forest{index: make(map[uint64]int32, len(edges)+len(edges)/2)}
	for _, e := range edges {
		if e.Parent == e.Child {
			return nil, fmt.Errorf("lcc: fork edge %d -> %d: goroutine forks itself", e.Parent, e.Child)
		}
		p, c := f.id(e.Parent), f.id(e.Child)
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
	// Link every goroutine to the root of its tree, one path at a time;
	// goroutines that reach no root lie on or below a cycle.
	const (
		unseen = -1
		onPath = -2
		cyclic = -3
	)
	for i := range f.nodes {
		if f.nodes[i].parent >= 0 {
			f.nodes[i].up = unseen
		}
	}
	var path []int32
	bad := false
	for i := range f.nodes {
		path = path[:0]
		x := int32(i)
		for f.nodes[x].up == unseen {
			f.nodes[x].up = onPath
			path = append(path, x)
			x = f.nodes[x].parent
		}
		r := f.nodes[x].up
		if r < 0 {
			r, bad = cyclic, true
		}
		for _, y := range path {
			f.nodes[y].up = r
		}
	}
	if bad {
		var cyc []uint64
		for i := range f.nodes {
			if f.nodes[i].up == cyclic {
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

// id returns the node of g, creating a root for it.
func (f *Forest) id(g uint64) int32 {
	if i, ok := f.index[g]; ok {
		return i
	}
	if f.index == nil {
		f.index = make(map[uint64]int32)
	}
	i := int32(len(f.nodes))
	f.index[g] = i
	_, asked := f.asked[g] // only as a parent: Add refuses such a child
	if asked {
		delete(f.asked, g)
	}
	f.nodes = append(f.nodes, node{g: g, parent: -1, up: i, answered: asked})
	return i
}

// root returns the root of i's tree.
func (f *Forest) root(i int32) int32 {
	for f.nodes[i].up != i {
		n := &f.nodes[i]
		n.up = f.nodes[n.up].up
		i = n.up
	}
	return i
}

// Add adds the fork edge e: e.Parent started e.Child when e.Parent's
// counter was e.Clock. It refuses, leaving the forest as it was, an edge
// whose child already has a parent (ErrForkedTwice), whose child an earlier
// query took to be a root (ErrAnswered), or that would close a cycle
// (ErrCycle). Any other edge leaves every earlier answer unchanged: a
// query's answer depends only on the ancestors of the later goroutine,
// which lose or gain nothing unless the root of that goroutine's tree gets
// a parent, and such a root has been taken to be one.
func (f *Forest) Add(e Edge) error {
	if e.Parent == e.Child {
		return fmt.Errorf("%w: goroutine %d forks itself", ErrCycle, e.Child)
	}
	c, known := f.index[e.Child]
	if known {
		n := &f.nodes[c]
		switch {
		case n.parent >= 0:
			return fmt.Errorf("%w: goroutine %d by %d at clock %d and by %d at clock %d",
				ErrForkedTwice, e.Child, f.nodes[n.parent].g, n.clock, e.Parent, e.Clock)
		case n.answered:
			return fmt.Errorf("%w: goroutine %d", ErrAnswered, e.Child)
		}
		// Only a known child can have descendants, and only a known
		// parent can be one of them.
		if p, ok := f.index[e.Parent]; ok && f.root(p) == c {
			return fmt.Errorf("%w: goroutine %d forks its ancestor %d", ErrCycle, e.Parent, e.Child)
		}
	} else if _, asked := f.asked[e.Child]; asked {
		return fmt.Errorf("%w: goroutine %d", ErrAnswered, e.Child)
	}
	c, p := f.id(e.Child), f.id(e.Parent)
	n := &f.nodes[c]
	n.parent, n.clock, n.up = p, e.Clock, f.root(p)
	return nil
}

// Len returns the number of goroutines named by the forest's edges.
func (f *Forest) Len() int { return len(f.nodes) }

// limit returns the counter anc had when it forked the branch leading to
// desc, or -1 when anc is not a proper ancestor of desc, so that (anc, c)
// happens before any event of desc iff c ≤ limit.
// The cache lookup inlines into the callers; a miss walks.
func (f *Forest) limit(anc, desc uint64) int64 {
	h := anc*0x9E3779B97F4A7C15 ^ desc*0xC2B2AE3D27D4EB4F
	if i := h >> f.shift; i < uint64(len(f.cache)) {
		if s := &f.cache[i]; s.anc == anc && s.desc == desc {
			return s.lim
		}
	}
	return f.miss(h, anc, desc)
}

// miss answers limit through a walk and keeps the answer in the cache.
func (f *Forest) miss(h, anc, desc uint64) int64 {
	lim := f.walk(anc, desc)
	f.misses++
	if f.cache == nil || f.misses > 2*len(f.cache) && len(f.cache) < 1<<maxCacheBits {
		f.growCache()
	}
	f.cache[h>>f.shift] = limitSlot{anc: anc, desc: desc, lim: lim}
	return lim
}

// growCache makes the cache 16 times larger (the first one minCacheBits),
// forgetting its answers: after twice as many misses as slots the
// questions are more than the cache holds.
func (f *Forest) growCache() {
	bits := uint8(minCacheBits)
	if f.cache != nil {
		bits = min(64-f.shift+4, maxCacheBits)
	}
	f.cache, f.shift, f.misses = make([]limitSlot, 1<<bits), 64-bits, 0
}

// walk is limit without the cache: up from desc until anc's child. A walk
// that ends at a root takes that root to be one (see Add).
func (f *Forest) walk(anc, desc uint64) int64 {
	i, ok := f.index[desc]
	if !ok {
		if f.asked == nil {
			f.asked = make(map[uint64]struct{})
		}
		f.asked[desc] = struct{}{}
		return -1
	}
	for {
		n := &f.nodes[i]
		if n.parent < 0 {
			n.answered = true
			return -1
		}
		if f.nodes[n.parent].g == anc {
			return int64(n.clock)
		}
		i = n.parent
	}
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
	return int64(a.Clock) <= f.limit(a.G, b.G)
}

// Concurrent reports whether a and b are unordered by the fork vector
// clocks. Events of the same goroutine are never concurrent (program
// order).
func (f *Forest) Concurrent(a, b Event) bool {
	if a.G == b.G {
		return false
	}
	return int64(a.Clock) > f.limit(a.G, b.G) && int64(b.Clock) > f.limit(b.G, a.G)
}
