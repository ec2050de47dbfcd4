package analyze

import (
	"errors"
	"fmt"
	"math"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/lcc"
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
// that may pair with an overwritten waiting use; a fork edge that its
// forest of the edges so far refuses: for a goroutine already taken to be
// a root, a second one, one closing a cycle) makes it give up (why), and
// the analysis falls back to the exact passes. So the result is always
// that of the definitions in docs/algorithm.md.
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
	forks   *lcc.Forest // the fork edges so far
	forkBad string      // why the fork edges defeat streaming; "" while exact
	failed  string      // why streaming gave up otherwise; "" while exact
	budget  int64       // bytes of per-object state allowed
	maxT    int64       // latest waiting use so far
	keep    int64       // trace time the log keeps at least (2δ)
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
	first   int64  // sequence number of the earliest of them (valid if waiting > 0)
	lcClock uint32
	lcSite  uint32
	lcOp    abi.Op // OpNone: no lifecycle row yet
	hasUse  bool
	// unsorted: a waiting use arrived earlier than a use before it, so
	// the chain of waiting uses is not in time order (reset at a dispose)
	unsorted bool
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
	// cache: a direct-mapped front cache, made when the table first
	// grows (a table of a few hundred objects needs none)
	cache *[1 << 12]objTSlot
}

type objTSlot struct {
	obj uint64
	idx int32 // index+1 into states; 0: empty
}

// newStreamPairer returns a streaming pass for the near-miss window delta
// within budget bytes whose waiting-use log keeps keep of trace time (0:
// 2δ).
func newStreamPairer(delta, budget, keep int64) *streamPairer {
	forks := new(lcc.Forest)
	s := &streamPairer{
		p:      newPairer(delta, forks),
		delta:  delta,
		maxT:   math.MinInt64,
		budget: budget,
		keep:   keep,
		forks:  forks,
	}
	s.p.wins = newWinTable()
	if keep <= 0 {
		s.keep = math.MaxInt64
		if delta <= math.MaxInt64/2 {
			s.keep = 2 * delta
		}
	}
	// Small to start with: both grow, and most traces are of short tests.
	s.wlog = make([]waitUse, 1<<8)
	s.objs.slots = make([]objTSlot, 1<<8)
	s.objs.mask = 1<<8 - 1
	return s
}

// get returns the index of the state of obj, creating it.
func (t *objTable) get(obj uint64) int32 {
	var c *objTSlot
	if t.cache != nil {
		c = &t.cache[(obj*0x9E3779B97F4A7C15)>>52]
		if c.idx != 0 && c.obj == obj {
			return c.idx - 1
		}
	}
	h := mix(obj) & t.mask
	for {
		s := &t.slots[h]
		if s.idx == 0 {
			break
		}
		if s.obj == obj {
			if c != nil {
				*c = *s
			}
			return s.idx - 1
		}
		h = (h + 1) & t.mask
	}
	if len(t.states) == cap(t.states) {
		ns, mem := offHeap[objState](max(2*cap(t.states), 64))
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
	if t.cache != nil {
		t.cache[(obj*0x9E3779B97F4A7C15)>>52] = t.slots[h]
	}
	return int32(len(t.states) - 1)
}

func (t *objTable) grow() {
	if t.cache == nil && len(t.slots) >= 1<<11 {
		t.cache = new([1 << 12]objTSlot)
	}
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

// memory is the approximate size of the streaming state in bytes. (An
// objState is 64 bytes since it keeps its first waiting use; the estimate
// keeps 56 so that the budget gives up streaming where it did.)
func (s *streamPairer) memory() int64 {
	return int64(len(s.objs.slots))*16 + int64(cap(s.objs.states))*56 + int64(len(s.wlog))*32
}

// why returns why streaming gave up, "" while its answers are exact.
func (s *streamPairer) why() string {
	if s.failed == "" {
		return s.forkBad
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
// machine, in three designs; see docs/benchmarks-analyze.md.)
func (s *streamPairer) batch(c *trace.Batch) {
	n := c.Len()
	tm, gs, cl, sites, objs := c.Time[:n], c.G[:n], c.Clock[:n], c.Site[:n], c.Obj[:n]
	for i, op := range c.Op[:n] {
		switch op := abi.Op(op); op {
		case abi.OpUse, abi.OpInit, abi.OpDispose:
			site := sites[i]
			if !validSite(site) {
				continue
			}
			obj := objs[i]
			if op == abi.OpUse {
				s.use(tm[i], gs[i], cl[i], site, obj)
			} else {
				s.lifecycle(tm[i], gs[i], cl[i], site, obj, op)
			}
		case abi.OpFork:
			s.fork(gs[i], objs[i], cl[i])
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
	if o.lcOp != abi.OpNone && t < o.lcT {
		s.fail("a use of object %#x at %d arrived after its lifecycle row at %d", obj, t, o.lcT)
		return
	}
	late := o.hasUse && t < o.maxUseT
	if !o.hasUse || t > o.maxUseT {
		o.maxUseT, o.hasUse = t, true
	}
	// init → use: the latest lifecycle row, at or before t, if an init.
	if o.lcOp == abi.OpInit {
		if inWindow(o.lcT, t, s.delta) {
			s.p.instance(pairKey{o.lcSite, site, abi.OpInit}, obj, o.lcT, o.lcG, o.lcClock, t, g, clock)
		} else {
			s.p.prunedWindow++ // what instance would count; the common case of a long-lived object
		}
	}
	// use → dispose: a dispose at exactly t counts as after the use.
	if o.lcOp == abi.OpDispose && o.lcT == t {
		s.p.instance(pairKey{site, o.lcSite, abi.OpUse}, obj, t, g, clock, o.lcT, o.lcG, o.lcClock)
	} else {
		o.unsorted = o.unsorted || late
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
	if o.waiting == 0 {
		o.first = q
	}
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
func (s *streamPairer) lifecycle(t int64, g uint64, clock, site uint32, obj uint64, op abi.Op) {
	o := &s.objs.states[s.objs.get(obj)]
	if o.hasUse && t <= o.maxUseT {
		s.fail("a lifecycle row of object %#x at %d arrived after its use at %d", obj, t, o.maxUseT)
		return
	}
	if o.lcOp != abi.OpNone && (t < o.lcT || t == o.lcT && op <= o.lcOp) {
		s.fail("lifecycle rows of object %#x arrived out of time order (%d after %d)", obj, t, o.lcT)
		return
	}
	if op == abi.OpDispose && o.waiting > 0 {
		// Walk the object's chain of waiting uses, latest first; entries
		// overwritten in the log are older than the log's 2δ (counted
		// below). When the chain is in time order (o.unsorted unset), the
		// first use out of the window ends the walk: the earlier ones are
		// out of it too (a waiting use is never later than t), so they
		// count as pruned without being read.
		walked := int64(0)
		oldest := s.wlogN - int64(len(s.wlog)) // entries up to this are gone
		for q := o.last; q > oldest && q > 0; {
			u := &s.wlog[q&int64(len(s.wlog)-1)]
			s.p.instance(pairKey{u.site, site, abi.OpUse}, obj, u.t, u.g, u.clock, t, g, clock)
			walked++
			if !o.unsorted && !inWindow(u.t, t, s.delta) {
				break
			}
			q = u.prev
		}
		if o.first <= oldest {
			// Some are overwritten entries, all at or before lostT: out
			// of the window only if t − lostT ≥ δ.
			if s.lost && (t < s.lostT || uint64(t)-uint64(s.lostT) < uint64(s.delta)) {
				s.fail("a dispose of object %#x at %d arrived after uses within δ before it left the log", obj, t)
				return
			}
		}
		s.p.prunedWindow += o.waiting - walked
		o.waiting, o.last, o.first, o.unsorted = 0, 0, 0, false
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
		if s.objs.states[i].lcOp != abi.OpNone {
			n++
		}
	}
	return n
}

// fork adds a fork edge to the forest the pairs are checked against, as
// it arrives. The forest refuses an edge that could change an answer it
// already gave; then streaming gives up.
func (s *streamPairer) fork(parent, child uint64, clock uint32) {
	if parent == child {
		return // malformed (the exact passes skip it too); it orders nothing
	}
	err := s.forks.Add(lcc.Edge{Parent: parent, Clock: clock, Child: child})
	if err == nil || s.forkBad != "" {
		return
	}
	switch {
	case errors.Is(err, lcc.ErrForkedTwice):
		// Which edge is first may depend on the reordering: leave the
		// choice to the exact passes, which see the trace's order.
		s.forkBad = fmt.Sprintf("goroutine %d is forked twice", child)
	case errors.Is(err, lcc.ErrAnswered):
		s.forkBad = fmt.Sprintf("the fork row of goroutine %d arrived after a query took it to be a root", child)
	default:
		s.forkBad = "fork edges form a cycle"
	}
}
