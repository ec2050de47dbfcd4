package inject

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/lcc"
	"github.com/memorder/wafl/plans"
)

// Basic mode (WAFL_ABLATE=basic; docs/algorithm.md, "Basic mode"): the
// thesis's WAFLBASIC (§3), TSVD's algorithm applied to MEMORDER sites,
// for the "no preparation run" row of Table 6.4. No preparation run makes
// the plan; instead every event of a detection run goes through a near-miss
// detector:
//
//   - each object (slot or channel address) has a short history of its
//     recent accesses — site, op, goroutine, fork clock, time — in a
//     fixed-size direct-mapped table with one small lock per bucket
//     (TSVD §3.4.2 keeps the last N_nm = 5 per object);
//   - an access that comes within δ (Params.NearMissNs) after an access
//     of another goroutine to the same object, an init followed by a use
//     or a use followed by a dispose, and that the fork clocks do not
//     order (unless parent-child is ablated too), is a near miss: the pair
//     (earlier site → later site) joins the trap set, its first site gets
//     probability 1 and is delayed from its next instance on, in this run
//     (TSVD §3.4.6, "planning & injection in the same run");
//   - the delay length is α × the near miss's gap, clamped like a planned
//     delay (fixed-delay: TSVD's 100 ms); decay, the caps, happens-before
//     inference and hoisting before a guarding Lock are the engine's; there
//     are no interference sets (they come from the preparation run's trace).
//
// Every pair added is logged (abi.EvTrap) and the wafl process adds it to
// the plan after the run (plans.Plan.AddTrap): the plan is TSVD's trap
// file, and the next run starts with the pairs of the earlier ones.
//
// None of this exists in other modes: the hooks call Access only when
// Basic reports true, and the engine's basic field is nil otherwise.

const (
	histBits = 12 // history buckets
	histWays = 4  // accesses remembered per bucket
	dynBits  = 13 // slots of a trap or partner table (at most half used)
	seenBits = 10 // the cache of pairs already in the trap set
)

// access is one event in an object's history.
type access struct {
	obj   uintptr
	t     int64
	g     uint64
	site  uint32
	clock uint32
	op    abi.Op
}

// histBucket holds the recent accesses of the objects that hash to it.
type histBucket struct {
	mu   sync.Mutex
	next uint8
	recs [histWays]access
}

// dynTable is a site table that grows during the run: open addressing
// over atomic words, one writer at a time (online.mu), lock-free readers.
// A value is stored before its key, so a reader that finds the key finds
// the value.
type dynTable struct {
	keys [1 << dynBits]atomic.Uint32
	vals [1 << dynBits]atomic.Pointer[loc]
	n    int // used slots; guarded by online.mu
}

func (t *dynTable) find(site uint32) *loc {
	if site == 0 {
		return nil
	}
	const mask = 1<<dynBits - 1
	for i := slotOf(site); ; i++ {
		switch t.keys[i&mask].Load() {
		case site:
			return t.vals[i&mask].Load()
		case 0:
			return nil
		}
	}
}

// insert adds l (whose site is not in t); false when t is half full.
// The caller holds online.mu.
func (t *dynTable) insert(l *loc) bool {
	const mask = 1<<dynBits - 1
	if l.site == 0 || t.n >= 1<<(dynBits-1) {
		return false
	}
	for i := slotOf(l.site); ; i++ {
		if t.keys[i&mask].Load() == 0 {
			t.vals[i&mask].Store(l)
			t.keys[i&mask].Store(l.site)
			t.n++
			return true
		}
	}
}

// online is basic mode's state.
type online struct {
	noForkOrder bool
	hist        [1 << histBits]histBucket

	// mu guards the trap set's structure: adding locations (traps,
	// partners, engine.locs), their pairs and partnerOf lists, and every
	// read of pairs and partnerOf (HB inference) in basic mode.
	mu       sync.Mutex
	traps    dynTable // delay locations ℓ1
	partners dynTable // partner sites ℓ2 watched for HB inference
	known    map[uint64]bool
	// seen caches keys of known, so that a near miss of a pair already in
	// the trap set (the common case, in a loop) takes no lock.
	seen [1 << seenBits]atomic.Uint64

	fmu    sync.Mutex
	forest lcc.Forest // the run's fork edges so far; guarded by fmu

	added atomic.Int64 // pairs added this run
	full  atomic.Int64 // pairs dropped: a table was full
}

// newOnline sets basic mode up over the engine built from the plan: the
// plan's locations (the pairs earlier runs found) are the initial trap
// set.
func newOnline(e *engine) *online {
	b := &online{noForkOrder: e.cfg.ablate.Has(abi.AblateParentChild), known: map[uint64]bool{}}
	for _, l := range e.table {
		if l.isLoc {
			b.traps.insert(l)
			for i := range l.pairs {
				k := pairKey(l.site, l.pairs[i].second, l.pairs[i].kind)
				b.known[k] = true
				b.seen[k&(1<<seenBits-1)].Store(k)
			}
		}
		if len(l.partnerOf) > 0 {
			b.partners.insert(l)
		}
	}
	e.maxLocDelay = max(e.maxLocDelay, e.params.MaxDelayNs, abi.FixedDelayNs)
	return b
}

// pairKey packs a pair: site ids are at most abi.MaxSite (30 bits), so
// bit 31 holds the kind.
func pairKey(first, second uint32, k plans.Kind) uint64 {
	key := uint64(first)<<32 | uint64(second)
	if k == plans.UseAfterDispose {
		key |= 1 << 31
	}
	return key
}

// Basic reports whether this detection run is in basic mode: package hook
// then sends every event to Access (with its op) instead of At.
func Basic() bool { return eng != nil && eng.basic != nil }

// Access is basic mode's hook, called before every instrumented access
// with its op (abi.OpInit, OpUse, OpDispose; other ops only delay).
func Access(site uint32, obj unsafe.Pointer, op abi.Op) {
	if e := eng; e != nil && e.basic != nil {
		g, c := lcc.Current()
		e.online(site, g, c, uintptr(obj), op)
	}
}

// BeforeBasic is Before in basic mode: the delay of site, when it is in
// the trap set, is injected before the Lock that guards it.
func BeforeBasic(site uint32) {
	if e := eng; e != nil && e.basic != nil && !e.stopped.Load() {
		if l := e.basic.traps.find(site); l != nil {
			l.hoisted.Store(true)
			if !l.dead.Load() {
				e.maybeDelay(l, lcc.Goid(), 0)
			}
		}
	}
}

// Forked tells basic mode of a fork edge (package hook, from Adopt), for
// the fork-clock check of near misses.
func Forked(edge lcc.Edge) {
	if e := eng; e != nil && e.basic != nil {
		b := e.basic
		b.fmu.Lock()
		_ = b.forest.Add(edge) // a refused edge (a callback adopting twice) changes nothing
		b.fmu.Unlock()
	}
}

// online handles one event of goroutine g (fork clock c) in basic mode:
// reorder notes, near-miss detection, HB inference at partner sites, and
// the delay at trap locations.
func (e *engine) online(site uint32, g uint64, c uint32, obj uintptr, op abi.Op) {
	if e.stopped.Load() {
		return
	}
	b := e.basic
	t := e.clk.now()
	t0, known := e.gtab.swap(g, t)
	if e.active.Load() > 0 {
		e.noteReorder(site, g, obj, t)
	}
	if obj != 0 && op.Access() {
		b.nearMiss(e, access{obj: obj, t: t, g: g, site: site, clock: c, op: op})
	}
	if !e.cfg.ablate.Has(abi.AblateHB) {
		if l2 := b.partners.find(site); l2 != nil {
			if !known {
				t0 = t
			}
			b.mu.Lock()
			e.inferHB(l2, g, t0, t)
			b.mu.Unlock()
		}
	}
	if l := b.traps.find(site); l != nil && !l.dead.Load() && !l.hoisted.Load() {
		e.maybeDelay(l, g, obj)
	}
}

func histIndex(obj uintptr) uint32 {
	return uint32((uint64(obj) * 0x9E3779B97F4A7C15) >> (64 - histBits))
}

// nearMiss records access a in its object's history and adds the near
// misses it completes to the trap set: an earlier init (use) of the same
// object by another goroutine at most δ before a use (dispose).
func (b *online) nearMiss(e *engine, a access) {
	var found [histWays]access
	n := 0
	delta := e.params.NearMissNs
	bk := &b.hist[histIndex(a.obj)]
	bk.mu.Lock()
	same := -1
	for i := range bk.recs {
		r := &bk.recs[i]
		if r.obj != a.obj {
			continue
		}
		if r.g == a.g {
			if r.site == a.site && r.op == a.op {
				same = i
			}
			continue
		}
		if a.t-r.t > delta || a.t < r.t {
			continue
		}
		if (r.op == abi.OpInit && a.op == abi.OpUse) || (r.op == abi.OpUse && a.op == abi.OpDispose) {
			found[n] = *r
			n++
		}
	}
	// A goroutine repeating one access (a loop) keeps one entry, so that
	// it does not push the other goroutines' accesses out.
	if same < 0 {
		same = int(bk.next)
		bk.next = (bk.next + 1) % histWays
	}
	bk.recs[same] = a
	bk.mu.Unlock()
	for _, r := range found[:n] {
		kind := plans.UseBeforeInit
		if r.op == abi.OpUse {
			kind = plans.UseAfterDispose
		}
		k := pairKey(r.site, a.site, kind)
		if b.seen[k&(1<<seenBits-1)].Load() == k {
			continue
		}
		if !b.noForkOrder && b.ordered(r, a) {
			continue
		}
		e.addTrap(kind, r, a, k)
	}
}

// ordered reports whether the fork clocks order access r before a.
func (b *online) ordered(r, a access) bool {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	return b.forest.HappensBefore(lcc.Event{G: r.g, Clock: r.clock}, lcc.Event{G: a.g, Clock: a.clock})
}

// addTrap adds the pair (first.site → second.site) of kind to the trap
// set, unless it is there already, and logs it.
func (e *engine) addTrap(kind plans.Kind, first, second access, key uint64) {
	b := e.basic
	gap := second.t - first.t
	b.mu.Lock()
	if b.known[key] {
		b.mu.Unlock()
		b.seen[key&(1<<seenBits-1)].Store(key)
		return
	}
	l1 := b.traps.find(first.site)
	if l1 == nil {
		d := e.params.Delay(gap)
		d = e.params.RunDelay(d) // the run's stretch and slack, as for planned delays
		if e.cfg.ablate.Has(abi.AblateFixedDelay) {
			d = abi.FixedDelayNs
		}
		l1 = &loc{site: first.site, isLoc: true, delayNs: d}
		if !b.traps.insert(l1) {
			b.mu.Unlock()
			b.full.Add(1)
			return
		}
		e.locs = append(e.locs, l1)
	}
	b.known[key] = true
	l1.pairs = append(l1.pairs, pairState{second: second.site, kind: kind})
	pair := len(l1.pairs) - 1
	// TSVD: a location that gains a dangerous pair is delayed with
	// probability 1 again, also when decay had taken it out.
	l1.probBits.Store(math.Float64bits(1))
	l1.dead.Store(false)
	l2 := b.partners.find(second.site)
	if l2 == nil {
		l2 = &loc{site: second.site}
		if !b.partners.insert(l2) {
			l2 = nil
			b.full.Add(1)
		}
	}
	if l2 != nil {
		l2.partnerOf = append(l2.partnerOf, partnerRef{first: l1, pair: pair})
	}
	delay := l1.delayNs
	b.mu.Unlock()
	b.seen[key&(1<<seenBits-1)].Store(key)
	b.added.Add(1)
	e.logTrap(kind, first, second, delay)
}

func (e *engine) logTrap(kind plans.Kind, first, second access, delay int64) {
	if e.log == nil {
		return
	}
	e.log.write(newRec(abi.EvTrap, second.t).uint(abi.KeyFirst, uint64(first.site)).uint(abi.KeySecond, uint64(second.site)).
		str(abi.KeyKind, string(kind)).uint(abi.KeyObj, uint64(second.obj)).int(abi.KeyGap, second.t-first.t).
		uint(abi.KeyG, second.g).int(abi.KeyDelayNs, delay))
}
