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

// maxSubtestKeys bounds the site sets and transitions a collection
// keeps; a run with more gets no Subtests.
const maxSubtestKeys = 1 << 22

// subtestCollector gathers, during a conversion, what Subtests needs: the
// fork rows, the marks, and the sites each goroutine reached. A
// goroutine's sites are a set id: sets grow one site at a time and are
// shared by the goroutines that reached the same sites in the same order
// (a pool's workers, a stress test's thousands of goroutines running the
// same code), so an event costs a lookup of its goroutine's set when the
// spill file switches goroutines and a transition lookup when the site
// changes, not an entry per (goroutine, site).
// A nil collector only drops the marks.
type subtestCollector struct {
	parent map[uint64]uint64 // child -> parent, by fork rows
	mark   map[uint64]uint64 // marked goroutine -> subtest id
	order  []uint64          // marked goroutines, in the order of their marks
	setOf  map[uint64]uint32 // goroutine -> its site set (curG's is curSet)
	sets   []siteSet         // by id; 0 is the empty set
	next   map[uint64]uint32 // set id<<32 | site -> the set with site added
	curG   uint64            // the goroutine of the last sited row
	cur    bool              // curG is set
	curSet uint32
	over   bool // more than maxSubtestKeys sets and transitions
}

// siteSet is a set of sites: its parent set and the one site added to it.
type siteSet struct {
	parent uint32
	site   uint32
}

func newSubtestCollector() *subtestCollector {
	return &subtestCollector{
		parent: map[uint64]uint64{}, mark: map[uint64]uint64{},
		setOf: map[uint64]uint32{}, sets: []siteSet{{}}, next: map[uint64]uint32{},
	}
}

// take reads rows base… of b, which the conversion just decoded, and
// removes the subtest marks and test boundary marks from them: Arrow
// traces never hold any.
func (c *subtestCollector) take(b *Batch, base int) {
	w := base
	for i := base; i < b.Len(); i++ {
		op := abi.Op(b.Op[i])
		switch {
		case op.Mark():
			continue
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
			c.reached(b.G[i], b.Site[i])
		}
		if w != i {
			b.Time[w], b.G[w], b.Clock[w], b.Site[w], b.Obj[w], b.Op[w] = b.Time[i], b.G[i], b.Clock[i], b.Site[i], b.Obj[i], b.Op[i]
		}
		w++
	}
	b.Time, b.G, b.Clock, b.Site, b.Obj, b.Op = b.Time[:w], b.G[:w], b.Clock[:w], b.Site[:w], b.Obj[:w], b.Op[:w]
}

// reached adds site to goroutine g's set.
func (c *subtestCollector) reached(g uint64, site uint32) {
	if !c.cur || g != c.curG {
		if c.cur {
			c.setOf[c.curG] = c.curSet
		}
		c.curG, c.cur, c.curSet = g, true, c.setOf[g]
	}
	if c.curSet != 0 && c.sets[c.curSet].site == site {
		return // the site of the set's last addition
	}
	key := uint64(c.curSet)<<32 | uint64(site)
	if to, ok := c.next[key]; ok {
		c.curSet = to
		return
	}
	to := c.curSet
	if !c.has(c.curSet, site) {
		to = uint32(len(c.sets))
		c.sets = append(c.sets, siteSet{parent: c.curSet, site: site})
	}
	c.next[key] = to
	c.curSet = to
	c.over = len(c.sets)+len(c.next) > maxSubtestKeys
}

// has says whether set id holds site.
func (c *subtestCollector) has(id, site uint32) bool {
	for ; id != 0; id = c.sets[id].parent {
		if c.sets[id].site == site {
			return true
		}
	}
	return false
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
	// under, -1 for none. It walks up to the first goroutine it knows and
	// remembers every goroutine on the way: a goroutine runs under its
	// parent's first-level subtest, or, when its parent runs under none,
	// under its own if it is one.
	var chain []uint64
	outermost := func(g uint64) int {
		chain = chain[:0]
		above := -1
		for x := g; ; {
			if i, ok := memo[x]; ok {
				above = i
				break
			}
			chain = append(chain, x)
			p, ok := c.parent[x]
			if !ok || len(chain) > len(c.parent) {
				break
			}
			x = p
		}
		for k := len(chain) - 1; k >= 0; k-- {
			x := chain[k]
			if above < 0 {
				if i, ok := top[x]; ok {
					above = i
				}
			}
			memo[x] = above
		}
		return above
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
	if c.cur {
		c.setOf[c.curG] = c.curSet
	}
	// Each (set, subtest) once: the goroutines of a subtest that ran the
	// same code share a set.
	// A set's parents are walked once per subtest too: the walk stops at
	// the first set it already took for that subtest.
	done := map[uint64]bool{}
	for g, set := range c.setOf {
		i := outermost(g)
		for id := set; id != 0; id = c.sets[id].parent {
			k := uint64(id)<<32 | uint64(uint32(i+1))
			if done[k] {
				break
			}
			done[k] = true
			site := c.sets[id].site
			if i < 0 {
				s.Outside[site] = true
			} else if l := s.Sites[site]; !slices.Contains(l, i) {
				s.Sites[site] = append(l, i)
			}
		}
	}
	for site, l := range s.Sites {
		slices.Sort(l)
		s.Sites[site] = l
	}
	return s
}
