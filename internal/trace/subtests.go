package trace

import (
	"slices"

	"github.com/memorder/wafl/abi"
)

// Subtests says under which subtest of the first level (t.Run called by
// the test's own function) each site of a preparation run ran: the
// conversion takes it from the subtest marks (abi.OpSubtest) and the fork
// rows. A goroutine runs under the subtest whose marked goroutine is its
// outermost marked ancestor by fork rows; a goroutine with no marked
// ancestor runs outside every subtest (the test's own function, its
// helpers' goroutines, package initialization).
type Subtests struct {
	// IDs are the first-level subtests' ids (abi.TestID of t.Name()),
	// in the order their marks are in the spill file.
	IDs []uint64
	// Sites maps each site a subtest's goroutines reached to the
	// indexes into IDs of those subtests, ascending.
	Sites map[uint32][]int
	// Outside holds the sites a goroutine of no subtest reached.
	Outside map[uint32]bool
}

// maxSubtestKeys bounds the distinct (goroutine, site) pairs a
// collection keeps; a run with more gets no Subtests.
const maxSubtestKeys = 1 << 22

type gsite struct {
	g    uint64
	site uint32
}

// subtestCollector gathers, during a conversion, what Subtests needs.
// A nil collector only drops the marks.
type subtestCollector struct {
	parent map[uint64]uint64 // child -> parent, by fork rows
	mark   map[uint64]uint64 // marked goroutine -> subtest id
	order  []uint64          // marked goroutines, in the order of their marks
	seen   map[gsite]struct{}
	last   gsite
	over   bool // more than maxSubtestKeys pairs
}

func newSubtestCollector() *subtestCollector {
	return &subtestCollector{parent: map[uint64]uint64{}, mark: map[uint64]uint64{}, seen: map[gsite]struct{}{}}
}

// take reads rows base… of b, which the conversion just decoded, and
// removes the subtest marks from them: Arrow traces never hold any.
func (c *subtestCollector) take(b *Batch, base int) {
	w := base
	for i := base; i < b.Len(); i++ {
		op := abi.Op(b.Op[i])
		switch {
		case op == abi.OpSubtest:
			if c != nil {
				if _, dup := c.mark[b.G[i]]; !dup {
					c.mark[b.G[i]] = b.Obj[i]
					c.order = append(c.order, b.G[i])
				}
			}
			continue
		case c == nil:
		case op == abi.OpFork:
			if _, dup := c.parent[b.Obj[i]]; !dup {
				c.parent[b.Obj[i]] = b.G[i]
			}
		case op.Sited() && !c.over:
			k := gsite{b.G[i], b.Site[i]}
			if k != c.last {
				c.last = k
				if _, ok := c.seen[k]; !ok {
					c.seen[k] = struct{}{}
					c.over = len(c.seen) > maxSubtestKeys
				}
			}
		}
		if w != i {
			b.Time[w], b.G[w], b.Clock[w], b.Site[w], b.Obj[w], b.Op[w] = b.Time[i], b.G[i], b.Clock[i], b.Site[i], b.Obj[i], b.Op[i]
		}
		w++
	}
	b.Time, b.G, b.Clock, b.Site, b.Obj, b.Op = b.Time[:w], b.G[:w], b.Clock[:w], b.Site[:w], b.Obj[:w], b.Op[:w]
}

// result returns what the collector gathered, nil when no subtest was
// marked or the run had too many (goroutine, site) pairs to keep.
func (c *subtestCollector) result() *Subtests {
	if c == nil || len(c.mark) == 0 || c.over {
		return nil
	}
	// The first-level subtests: marked goroutines with no marked
	// ancestor, by the order of their marks.
	top := map[uint64]int{} // marked goroutine -> index into IDs
	s := &Subtests{Sites: map[uint32][]int{}, Outside: map[uint32]bool{}}
	memo := map[uint64]int{}
	// outermost returns the index of the first-level subtest g runs
	// under, -1 for none.
	outermost := func(g uint64) int {
		if i, ok := memo[g]; ok {
			return i
		}
		m := uint64(0)
		found := false
		x := g
		for steps := 0; steps <= len(c.parent); steps++ {
			if _, ok := c.mark[x]; ok {
				m, found = x, true
			}
			p, ok := c.parent[x]
			if !ok {
				break
			}
			x = p
		}
		i := -1
		if found {
			var ok bool
			if i, ok = top[m]; !ok {
				i = -1
			}
		}
		memo[g] = i
		return i
	}
	for _, g := range c.order {
		// A marked goroutine is first-level when no marked goroutine is
		// above it.
		first := true
		x := g
		for steps := 0; steps <= len(c.parent); steps++ {
			p, ok := c.parent[x]
			if !ok {
				break
			}
			if _, ok := c.mark[p]; ok {
				first = false
				break
			}
			x = p
		}
		if first {
			top[g] = len(s.IDs)
			s.IDs = append(s.IDs, c.mark[g])
		}
	}
	for k := range c.seen {
		i := outermost(k.g)
		if i < 0 {
			s.Outside[k.site] = true
			continue
		}
		if l := s.Sites[k.site]; !slices.Contains(l, i) {
			s.Sites[k.site] = append(l, i)
		}
	}
	for site, l := range s.Sites {
		slices.Sort(l)
		s.Sites[site] = l
	}
	return s
}
