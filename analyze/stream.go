package analyze

import (
	"fmt"
	"math"
)

// streamPairer finds the pair instances during pass 1, as the rows
// arrive, instead of in a second pass over the trace against a sorted
// lifecycle index. It relies on two properties that traces have in
// practice — each object's rows arrive in time order, and a goroutine's
// fork row arrives before anything asks whether it is concurrent with
// another (pass 1's reordering restores time order within its horizon) —
// and checks them: the first row that would make its answers differ from
// the exact index-based pass 2 (a lifecycle row at or before a use of its
// object already examined, or earlier than the object's latest lifecycle
// row; a use earlier than its object's latest lifecycle row; a dispose
// that may pair with an overwritten waiting use; a fork edge for a
// goroutine already taken to be a root, or a second one) sets failed, and
// Run falls back to the exact passes. So the result is always that of the
// definitions in docs/algorithm.md.
//
// Per object it keeps the latest lifecycle row, the number of uses
// waiting for the object's next dispose and the latest of them. The
// waiting uses themselves go to one log in arrival order (written
// sequentially, a ring buffer), each entry linking to the previous waiting
// use of its object; a dispose walks its object's chain. The log keeps at
// least the last 2δ of trace time (it grows otherwise); an older entry is
// overwritten, and counts as out of the window when its object's dispose
// comes — unless that dispose is within δ of an overwritten entry (rows far
// out of order), where streaming gives up.
type streamPairer struct {
	p       *pairer
	delta   int64
	objs    objTable
	wlog    []waitUse // ring buffer; entry of sequence number q at q & (len-1)
	wlogN   int64     // entries written; sequence numbers start at 1
	lostT   int64     // latest time of an overwritten entry
	lost    bool
	inc     incForest
	failed  string // why streaming gave up; "" while exact
	budget  int64  // bytes of per-object state allowed
	maxT    int64  // latest waiting use so far
	keep    int64  // trace time the log keeps at least (2δ)
	wlogMem []byte

	overwritten int64 // log entries overwritten
}

// objState is the streaming state of one object.
type objState struct {
	lcT     int64  // latest lifecycle row by (time, op)
	lcG     uint64 //
	maxUseT int64  // latest use examined (valid if hasUse)
	waiting int64  // uses waiting for the next dispose
	last    int64  // sequence number of the latest of them in wlog (0: none)
	lcClock uint32
	lcSite  uint32
	lcOp    uint8 // 0: no lifecycle row yet
	hasUse  bool
}

// waitUse is a use waiting for its object's next dispose.
type waitUse struct {
	t     int64
	g     uint64
	prev  int64 // sequence number of the object's previous waiting use
	clock uint32
	site  uint32
}

// objTable maps objects to their state: open addressing over 16-byte
// slots, the states themselves dense (no pointers for the collector).
type objTable struct {
	slots  []objTSlot
	mask   uint64
	states []objState // len: states in use; cap: allocated
	// mappings of slots and states outside the heap (see offHeap)
	slotMem, stateMem []byte
	cache             [1 << 12]objTSlot // direct-mapped front cache
}

type objTSlot struct {
	obj uint64
	idx int32 // index+1 into states; 0: empty
}

func newStreamPairer(delta int64, budget int64) *streamPairer {
	s := &streamPairer{
		p:      &pairer{delta: delta, pairs: make(map[pairKey]*pairAgg)},
		delta:  delta,
		maxT:   math.MinInt64,
		budget: budget,
		keep:   math.MaxInt64,
	}
	if delta <= math.MaxInt64/2 {
		s.keep = 2 * delta
	}
	s.wlog = make([]waitUse, 1<<12)
	s.p.inc = &s.inc
	s.inc.nodes = make(map[uint64]incNode)
	s.objs.slots = make([]objTSlot, 1<<12)
	s.objs.mask = 1<<12 - 1
	return s
}

// get returns the index of the state of obj, creating it.
func (t *objTable) get(obj uint64) int32 {
	c := &t.cache[(obj*0x9E3779B97F4A7C15)>>52]
	if c.idx != 0 && c.obj == obj {
		return c.idx - 1
	}
	h := mix(obj) & t.mask
	for {
		s := &t.slots[h]
		if s.idx == 0 {
			break
		}
		if s.obj == obj {
			*c = *s
			return s.idx - 1
		}
		h = (h + 1) & t.mask
	}
	if len(t.states) == cap(t.states) {
		ns, mem := offHeap[objState](max(2*cap(t.states), 1024))
		copy(ns, t.states)
		freeOffHeap(t.stateMem)
		t.states, t.stateMem = ns[:len(t.states)], mem
	}
	t.states = append(t.states, objState{})
	if 2*len(t.states) > len(t.slots) {
		t.grow()
		h = mix(obj) & t.mask
		for t.slots[h].idx != 0 {
			h = (h + 1) & t.mask
		}
	}
	t.slots[h] = objTSlot{obj: obj, idx: int32(len(t.states))}
	*c = t.slots[h]
	return int32(len(t.states) - 1)
}

func (t *objTable) grow() {
	old, oldMem := t.slots, t.slotMem
	defer freeOffHeap(oldMem)
	t.slots, t.slotMem = offHeap[objTSlot](2 * len(old))
	t.mask = uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.idx == 0 {
			continue
		}
		h := mix(s.obj) & t.mask
		for t.slots[h].idx != 0 {
			h = (h + 1) & t.mask
		}
		t.slots[h] = s
	}
}

// release frees the table's memory outside the heap.
func (t *objTable) release() {
	freeOffHeap(t.slotMem)
	freeOffHeap(t.stateMem)
	t.slots, t.states, t.slotMem, t.stateMem = nil, nil, nil, nil
}

// release frees the streaming state kept outside the heap; s is unusable
// afterwards.
func (s *streamPairer) release() {
	s.objs.release()
	freeOffHeap(s.wlogMem)
	s.wlog, s.wlogMem = nil, nil
}

// memory is the approximate size of the streaming state in bytes.
func (s *streamPairer) memory() int64 {
	return int64(len(s.objs.slots))*16 + int64(cap(s.objs.states))*56 + int64(len(s.wlog))*32
}

// why returns why streaming gave up, "" while its answers are exact.
func (s *streamPairer) why() string {
	if s.failed == "" {
		return s.inc.bad
	}
	return s.failed
}

func (s *streamPairer) fail(format string, args ...any) {
	if s.failed == "" {
		s.failed = fmt.Sprintf(format, args...)
	}
}

// batch examines the rows of c. (Splitting this work by object hash
// between two goroutines was measured slower on the 2-core benchmark
// machine: 7.0–7.4 s instead of 6.3–6.7 s, more CPU, more memory.)
func (s *streamPairer) batch(c *Columns) {
	n := c.Len()
	tm, gs, cl, sites, objs := c.Time[:n], c.G[:n], c.Clock[:n], c.Site[:n], c.Obj[:n]
	for i, op := range c.Op[:n] {
		switch op {
		case opUse, opInit, opDispose:
			site := sites[i]
			if site == 0 || site > maxSite {
				continue
			}
			obj := objs[i]
			if op == opUse {
				s.use(tm[i], gs[i], cl[i], site, obj)
			} else {
				s.lifecycle(tm[i], gs[i], cl[i], site, obj, op)
			}
		case opFork:
			s.inc.add(gs[i], objs[i], cl[i])
		}
		if s.failed != "" {
			return
		}
	}
}

// use examines a use of obj at site in goroutine g.
func (s *streamPairer) use(t int64, g uint64, clock, site uint32, obj uint64) {
	oi := s.objs.get(obj)
	o := &s.objs.states[oi]
	if o.lcOp != 0 && t < o.lcT {
		s.fail("a use of object %#x at %d arrived after its lifecycle row at %d", obj, t, o.lcT)
		return
	}
	if !o.hasUse || t > o.maxUseT {
		o.maxUseT, o.hasUse = t, true
	}
	// init → use: the latest lifecycle row, at or before t, if an init.
	if o.lcOp == opInit {
		if inWindow(o.lcT, t, s.delta) {
			s.p.instance(pairKey{o.lcSite, site, opInit}, obj, o.lcT, o.lcG, o.lcClock, t, g, clock)
		} else {
			s.p.prunedWindow++ // what instance would count; the common case of a long-lived object
		}
	}
	// use → dispose: a dispose at exactly t counts as after the use.
	if o.lcOp == opDispose && o.lcT == t {
		s.p.instance(pairKey{site, o.lcSite, opUse}, obj, t, g, clock, o.lcT, o.lcG, o.lcClock)
	} else {
		s.wait(o, waitUse{t: t, g: g, clock: clock, site: site})
	}
	if len(s.objs.states)&1023 == 0 && s.memory() > s.budget {
		s.fail("streaming state exceeds the memory budget")
	}
}

// wait logs u as the latest waiting use of o.
func (s *streamPairer) wait(o *objState, u waitUse) {
	s.maxT = max(s.maxT, u.t)
	q := s.wlogN + 1
	mask := int64(len(s.wlog) - 1)
	old := &s.wlog[q&mask]
	if q > int64(len(s.wlog)) {
		// old is entry q − len; keep the last 2δ of trace time.
		if old.t > s.maxT || uint64(s.maxT)-uint64(old.t) < uint64(s.keep) {
			s.growLog()
			mask = int64(len(s.wlog) - 1)
			old = &s.wlog[q&mask]
		}
		if q > int64(len(s.wlog)) {
			s.overwritten++
			if !s.lost || old.t > s.lostT {
				s.lostT, s.lost = old.t, true
			}
		}
	}
	u.prev = o.last
	*old = u
	s.wlogN = q
	o.last = q
	o.waiting++
}

// growLog doubles the waiting-use log.
func (s *streamPairer) growLog() {
	n := len(s.wlog)
	nw, mem := offHeap[waitUse](2 * n)
	// entries wlogN−n+1 … wlogN move to their new positions
	for q := max(s.wlogN-int64(n)+1, 1); q <= s.wlogN; q++ {
		nw[q&int64(2*n-1)] = s.wlog[q&int64(n-1)]
	}
	freeOffHeap(s.wlogMem)
	s.wlog, s.wlogMem = nw, mem
	if s.memory() > s.budget {
		s.fail("streaming state exceeds the memory budget")
	}
}

// lifecycle examines an init or dispose of obj.
func (s *streamPairer) lifecycle(t int64, g uint64, clock, site uint32, obj uint64, op uint8) {
	o := &s.objs.states[s.objs.get(obj)]
	if o.hasUse && t <= o.maxUseT {
		s.fail("a lifecycle row of object %#x at %d arrived after its use at %d", obj, t, o.maxUseT)
		return
	}
	if o.lcOp != 0 && (t < o.lcT || t == o.lcT && op <= o.lcOp) {
		s.fail("lifecycle rows of object %#x arrived out of time order (%d after %d)", obj, t, o.lcT)
		return
	}
	if op == opDispose && o.waiting > 0 {
		// Walk the object's chain of waiting uses; entries overwritten in
		// the log are older than the log's 2δ (counted below).
		walked := int64(0)
		oldest := s.wlogN - int64(len(s.wlog)) // entries up to this are gone
		for q := o.last; q > oldest && q > 0; {
			u := &s.wlog[q&int64(len(s.wlog)-1)]
			s.p.instance(pairKey{u.site, site, opUse}, obj, u.t, u.g, u.clock, t, g, clock)
			walked++
			q = u.prev
		}
		if walked < o.waiting {
			// The missing ones are overwritten entries, all at or before
			// lostT: out of the window only if t − lostT ≥ δ.
			if s.lost && (t < s.lostT || uint64(t)-uint64(s.lostT) < uint64(s.delta)) {
				s.fail("a dispose of object %#x at %d arrived after uses within δ before it left the log", obj, t)
				return
			}
			s.p.prunedWindow += o.waiting - walked
		}
		o.waiting, o.last = 0, 0
	}
	o.lcT, o.lcG, o.lcClock, o.lcSite, o.lcOp = t, g, clock, site, op
	if len(s.objs.states)&1023 == 0 && s.memory() > s.budget {
		s.fail("streaming state exceeds the memory budget")
	}
}

// objects is the number of objects with at least one lifecycle row.
func (s *streamPairer) objects() int64 {
	n := int64(0)
	for i := range s.objs.states {
		if s.objs.states[i].lcOp != 0 {
			n++
		}
	}
	return n
}

// incForest answers fork-order queries from the fork edges seen so far.
// A query that ends its walk at a goroutine with no known parent marks it;
// a fork edge arriving later for a marked goroutine could have changed an
// answer, so it sets bad.
type incForest struct {
	nodes map[uint64]incNode
	edges int
	bad   string
	cache [1 << 14]limitSlot
}

type incNode struct {
	parent    uint64
	clock     uint32
	hasParent bool
	walked    bool // taken to be a root by a query
}

// add records a fork edge unless the child has one already or is the
// parent (forest.add keeps the same edges).
func (f *incForest) add(parent, child uint64, clock uint32) {
	n := f.nodes[child]
	if parent == child {
		return
	}
	if n.hasParent {
		// Which edge is first may depend on the reordering: leave the
		// choice to the exact passes, which see the trace's order.
		if f.bad == "" {
			f.bad = fmt.Sprintf("goroutine %d is forked twice", child)
		}
		return
	}
	if n.walked && f.bad == "" {
		f.bad = fmt.Sprintf("the fork row of goroutine %d arrived after a query took it to be a root", child)
	}
	n.parent, n.clock, n.hasParent = parent, clock, true
	f.nodes[child] = n
	f.edges++
}

// limit is forestView.limit over the edges seen so far.
func (f *incForest) limit(anc, desc uint64) int64 {
	h := (anc*0x9E3779B97F4A7C15 ^ desc*0xC2B2AE3D27D4EB4F) >> 50
	sl := &f.cache[h]
	if sl.ok && sl.anc == anc && sl.desc == desc {
		return sl.lim
	}
	lim := int64(-1)
	x := desc
	for steps := 0; ; steps++ {
		n := f.nodes[x]
		if !n.hasParent {
			if !n.walked {
				n.walked = true
				f.nodes[x] = n
			}
			break
		}
		if steps > f.edges {
			if f.bad == "" {
				f.bad = "fork edges form a cycle"
			}
			break
		}
		if n.parent == anc {
			lim = int64(n.clock)
			break
		}
		x = n.parent
	}
	*sl = limitSlot{anc: anc, desc: desc, lim: lim, ok: true}
	return lim
}

func (f *incForest) concurrent(g1 uint64, c1 uint32, g2 uint64, c2 uint32) bool {
	if g1 == g2 {
		return false
	}
	return int64(c1) > f.limit(g1, g2) && int64(c2) > f.limit(g2, g1)
}
