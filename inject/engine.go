package inject

import (
	"bytes"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/lcc"
	"github.com/memorder/wafl/plans"
)

// recentDelays is how many recent delays a location remembers for
// happens-before inference.
const recentDelays = 8

// hbMinSlackNs is the least time after a delay's end within which a
// partner access still counts as "right after" it (scheduler latency).
const hbMinSlackNs = int64(2 * time.Millisecond)

// loc is the run-time state of one site the plan mentions: a delay
// location ℓ1, a partner ℓ2 of one, or both.
type loc struct {
	// on is nonzero while At must look at this site: the location is
	// still in S, or the site is watched as a partner for HB inference.
	on   atomic.Uint32
	site uint32

	isLoc   bool  // a delay location ℓ1 of the plan
	delayNs int64 // learned delay length
	// grown is set when the plan already lengthened this location's
	// delay (Location.Grown) or it is at MaxDelayNs: only then may
	// happens-before inference prune its pairs.
	grown bool
	// holdsAll is set when this location has a use-after-dispose or
	// use-before-init pair seen in a trace (not predicted, static or
	// mirrored): only such a delay waits for a partner known to come, and
	// it holds the other locations while it waits (maybeDelay). A
	// check-then-act location is a check every goroutine passing it
	// reaches, often delayed for nothing (examples/watchadd's reader): it
	// holds only its sets and its mirror.
	holdsAll bool
	interf   []*loc
	// yields are the locations whose delay in progress makes a delay here
	// skip when this one would outlast it (the placement rule,
	// docs/algorithm.md "Which side is delayed"): this site lies on the
	// path of their partner — it is in their interference set, or it is
	// the partner ℓ2 of one of their pairs — so a delay here would hold
	// back the goroutine their delay waits for. A location may be in both
	// interf and yields (mutual interference, this site itself).
	yields []*loc
	pairs  []pairState
	// partnerOf lists the unpruned pairs this site is ℓ2 of.
	partnerOf []partnerRef
	// awaits lists the live locations ℓ1 of the unpruned
	// use-after-dispose pairs whose dispose is this site: the first
	// dispose of a run here waits for a partner that has not come yet
	// (awaitLate); awaited is set once it did, and awaitOpen while that
	// wait lasts: every other dispose here in the meantime waits with it.
	// guarded is set once a goroutine passed the lock that guards this
	// site (Before): the wait is then made there, not under the lock.
	awaits    []*loc
	awaited   atomic.Bool
	awaitOpen atomic.Bool
	guarded   atomic.Bool

	// hoisted is set once the site's delay was injected before a
	// guarding lock (Before): the site itself is then not delayed.
	hoisted atomic.Bool

	// startAt is when the latest delay here began and metAt when a partner
	// ℓ2 of an unpruned pair of this location was last reached, ns: a
	// delay in progress with metAt < startAt still waits for its partner
	// (waiting), and holds every other location's delay that would outlast
	// it (the placement rule).
	startAt atomic.Int64
	metAt   atomic.Int64

	probBits  atomic.Uint64 // float64 bits of P
	dead      atomic.Bool   // left S during this run
	instances atomic.Uint64 // dynamic instances seen at this location
	active    atomic.Int32  // delays in progress here
	until     atomic.Int64  // latest planned end of a delay in progress here, ns
	delays    atomic.Int64  // delays injected here this run
	skipProb  atomic.Int64

	mu     sync.Mutex
	recent [recentDelays]delayRec // ring of recent delays, guarded by mu
	nrec   int                    // delays ever put in recent
}

type pairState struct {
	second uint32
	kind   plans.Kind
	noWait bool // plans.Pair.NoWait: no dispose at second waits for this pair
	pruned atomic.Bool
	late   atomic.Bool // a late record was logged for the pair this run
}

type partnerRef struct {
	first *loc
	pair  int
}

// delayRec is one delay, as HB inference sees it.
type delayRec struct {
	id     uint64
	g      uint64
	ns     int64 // planned length
	ts, te int64 // start, end (te valid when ended)
	ended  bool
}

// inflight is a delay in progress, for reorder detection.
type inflight struct {
	id   uint64
	site uint32
	g    uint64
	obj  uintptr
	// lastG and lastSite are the latest reorder logged for this delay.
	lastG    uint64
	lastSite uint32
}

func (l *loc) prob() float64 { return math.Float64frombits(l.probBits.Load()) }

// waiting reports whether the latest delay at l began after its partners
// were last reached: while it is in progress, it still waits for one.
func (l *loc) waiting() bool { return l.metAt.Load() < l.startAt.Load() }

// clock abstracts time for tests: now is monotonic nanoseconds since the
// engine started, sleep blocks the calling goroutine.
type clock struct {
	now       func() int64
	sleep     func(ns int64)
	unixStart int64
	// monoStart is the runtime's monotonic clock at the start: "t" of
	// the run log plus monoStart is the time a recording run's trace
	// gives the same moment.
	monoStart int64
}

func realClock() clock {
	start := nanotime()
	return clock{
		// The runtime's monotonic clock, not time.Now: inside a
		// testing/synctest bubble time.Now is the bubble's fake clock,
		// which does not move while a goroutine sleeps in a system call
		// (realSleep), so a loop waiting for real time would never end.
		now:       func() int64 { return nanotime() - start },
		sleep:     realSleep, // real time even inside a synctest bubble
		unixStart: time.Now().UnixNano(),
		monoStart: start,
	}
}

// nanotime is the runtime's monotonic clock in nanoseconds: real time in
// and out of synctest bubbles.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// engine is one detection run.
type engine struct {
	cfg    config
	clk    clock
	params plans.Params
	table  map[uint32]*loc // the sites the plan mentions
	fast   siteTable       // table, for At
	locs   []*loc          // delay locations, in site order
	log    *logWriter

	gtab gtable

	nextID   atomic.Uint64
	active   atomic.Int32
	total    atomic.Int64 // delay reserved in this run, ns
	lastEnd  atomic.Int64 // latest delay end, ns since start
	nDelays  atomic.Int64
	skipInt  atomic.Int64
	skipCapG atomic.Int64
	skipCapR atomic.Int64
	skipPart atomic.Int64 // delays skipped on the partner's side (loc.yields)
	hbPrunes atomic.Int64
	reorders atomic.Int64
	panics   atomic.Int64 // operations about to panic (panics.go)
	awaits   atomic.Int64 // disposes that waited for a late partner (awaitLate)
	stopped  atomic.Bool

	mu   sync.Mutex
	perG map[uint64]int64 // delay per goroutine, ns; guarded by mu

	fmu    sync.Mutex
	flight []inflight // delays in progress; guarded by fmu

	maxLocDelay int64
	finishOnce  sync.Once
	// basic is basic mode's online state (WAFL_ABLATE=basic, online.go);
	// nil in every other run.
	basic *online
	// runningHook replaces delayedRunning in tests.
	runningHook func() bool
}

// newEngine builds the site table from the plan and opens the log.
func newEngine(cfg config, clk clock) (*engine, error) {
	p := cfg.plan
	e := &engine{
		cfg:    cfg,
		clk:    clk,
		params: effective(p.Params),
		perG:   make(map[uint64]int64, 256), // sized so that delays of new goroutines do not grow it
		flight: make([]inflight, 0, 64),
	}
	e.table = make(map[uint32]*loc)
	get := func(site uint32) *loc {
		if e.table[site] == nil {
			e.table[site] = &loc{site: site}
			e.table[site].metAt.Store(-1) // before any delay's start
		}
		return e.table[site]
	}
	for i := range p.Locations {
		pl := &p.Locations[i]
		l := get(pl.Site)
		l.isLoc = true
		l.delayNs = pl.DelayNs
		if pl.DelayNs > 0 {
			// The run's stretch and scheduling slack on top of the learned
			// length, never past the bound unless the length already is.
			l.delayNs = e.params.RunDelay(pl.DelayNs)
		}
		if cfg.ablate.Has(abi.AblateFixedDelay) && pl.DelayNs > 0 {
			l.delayNs = abi.FixedDelayNs
		}
		l.grown = pl.Grown > 0 || pl.DelayNs >= e.params.MaxDelayNs
		l.probBits.Store(math.Float64bits(pl.Prob))
		l.pairs = make([]pairState, len(pl.Pairs))
		for j, pr := range pl.Pairs {
			l.pairs[j].second = pr.Second
			l.pairs[j].kind = pr.Kind
			l.pairs[j].noWait = pr.NoWait
			l.pairs[j].pruned.Store(pr.Pruned != "")
			if pr.Pruned == "" && !plans.Guessed(pr.From) && pr.Kind != plans.CheckThenAct {
				l.holdsAll = true
			}
		}
		if !pl.Live() || pl.DelayNs <= 0 {
			l.dead.Store(true)
		}
		e.locs = append(e.locs, l)
		e.maxLocDelay = max(e.maxLocDelay, l.delayNs)
	}
	for i := range p.Locations {
		pl := &p.Locations[i]
		l := e.table[pl.Site]
		for _, s := range pl.Interference {
			if o := e.table[s]; o != nil && o.isLoc {
				l.interf = append(l.interf, o)
			}
		}
		if l.dead.Load() {
			continue
		}
		for j := range l.pairs {
			if !l.pairs[j].pruned.Load() {
				o := get(l.pairs[j].second)
				o.partnerOf = append(o.partnerOf, partnerRef{first: l, pair: j})
				if l.pairs[j].kind == plans.UseAfterDispose && !l.pairs[j].noWait && !cfg.ablate.Has(abi.AblateBasic) && !slices.Contains(o.awaits, l) {
					o.awaits = append(o.awaits, l)
				}
			}
		}
	}
	if !cfg.ablate.Has(abi.AblateBasic) {
		e.placeSides()
	}
	for _, l := range e.table {
		e.refreshOn(l)
	}
	e.fast = newSiteTable(e.table)
	if cfg.ablate.Has(abi.AblateBasic) {
		e.basic = newOnline(e)
	}
	if cfg.logPath != "" {
		w, err := openLog(cfg.logPath)
		if err != nil {
			return nil, err
		}
		e.log = w
	}
	return e, nil
}

// placeSides fills loc.yields: a location ℓ* yields to ℓ1 when ℓ* is in
// ℓ1's interference set (ℓ* ran in the window of ℓ1's partner, thesis
// §4.4) or ℓ* is the partner ℓ2 of an unpruned pair of ℓ1. Basic mode has
// no interference sets and skips nothing.
func (e *engine) placeSides() {
	add := func(star, l1 *loc) {
		if star == nil || !star.isLoc || slices.Contains(star.yields, l1) {
			return
		}
		star.yields = append(star.yields, l1)
	}
	for _, l1 := range e.locs {
		if l1.dead.Load() {
			continue
		}
		for _, star := range l1.interf {
			add(star, l1)
		}
		for j := range l1.pairs {
			if !l1.pairs[j].pruned.Load() {
				add(e.table[l1.pairs[j].second], l1)
			}
		}
	}
}

// refreshOn recomputes whether At must look at l.
func (e *engine) refreshOn(l *loc) {
	on := (l.isLoc && !l.dead.Load()) || len(l.partnerOf) > 0
	if on && !e.stopped.Load() {
		l.on.Store(1)
	} else {
		l.on.Store(0)
	}
}

// at is the slow path of At.
func (e *engine) at(l *loc, obj uintptr) {
	e.event(l, lcc.Goid(), obj)
}

// event handles an access to site l by goroutine g.
func (e *engine) event(l *loc, g uint64, obj uintptr) {
	if e.stopped.Load() {
		return
	}
	t := e.clk.now()
	t0, known := e.gtab.swap(g, t)
	if e.active.Load() > 0 {
		e.noteReorder(l.site, g, obj, t)
	}
	for _, ref := range l.partnerOf {
		// A partner reached: a delay of ref.first in progress no longer
		// waits for it (waiting).
		for m := &ref.first.metAt; ; {
			old := m.Load()
			if t <= old || m.CompareAndSwap(old, t) {
				break
			}
		}
	}
	if len(l.partnerOf) > 0 && !e.cfg.ablate.Has(abi.AblateHB) {
		if !known {
			t0 = t // no earlier watched event: no stall to infer from, but a late arrival still counts
		}
		e.inferHB(l, g, t0, t)
	}
	if len(l.awaits) > 0 && l.mayAwait() && !l.guarded.Load() && e.awaitLate(l, g) && e.active.Load() > 0 {
		// The access happens now, after the wait, maybe inside the late
		// partner's delay: the reorder record names this goroutine.
		e.noteReorder(l.site, g, obj, e.clk.now())
	}
	if l.isLoc && !l.dead.Load() && !l.hoisted.Load() {
		e.maybeDelay(l, g, obj)
	}
}

// awaitLate makes the first dispose of a run at partner site l wait for a
// late partner (docs/algorithm.md, "Waiting for a late partner"): when a
// use-after-dispose location ℓ1 of l is live, has not been reached in this
// run and will delay its first instance (P = 1, or its seeded draw for
// instance 0 says yes), the goroutine disposing waits here, once, until
// such a location is reached (its goroutine passed its check and is now
// delayed at ℓ1, so its use comes after this dispose) or the run's
// maximum delay has passed. The wait counts against the run's delay
// budget. A dispose at l while that wait lasts waits with it (joinAwait).
func (e *engine) awaitLate(l *loc, g uint64) (waited bool) {
	if l.awaitOpen.Load() {
		return e.joinAwait(l, g)
	}
	if l.awaited.Load() {
		return false
	}
	var buf [8]*loc // on the stack: the program under test may count allocations
	wait := buf[:0]
	for _, a := range l.awaits {
		if a.dead.Load() || a.instances.Load() > 0 || a.delayNs <= 0 {
			continue
		}
		if p := a.prob(); p <= 0 || p < 1 && uniform(e.cfg.seed, a.site, 0) >= p {
			continue
		}
		wait = append(wait, a)
	}
	if len(wait) == 0 || e.holding(l) || !l.awaited.CompareAndSwap(false, true) {
		return false
	}
	bound := e.params.MaxDelayNs
	for _, a := range wait {
		bound = max(bound, a.delayNs)
	}
	if e.total.Add(bound) > e.params.MaxDelayPerRunNs {
		e.total.Add(-bound)
		return false
	}
	e.awaits.Add(1)
	l.awaitOpen.Store(true)
	start := e.clk.now()
	ns := int64(0)
	for ns < bound && !anyReached(wait) && !e.holding(l) {
		e.clk.sleep(min(awaitStepNs, bound-ns))
		ns = e.clk.now() - start
	}
	l.awaitOpen.Store(false)
	e.total.Add(min(ns, bound) - bound) // the budget pays what was waited
	e.logAwait(l, g, ns)
	return true
}

// mayAwait reports whether a dispose at l may still wait (awaitLate):
// no wait happened here in this run yet, or one is in progress. The
// common case after the run's wait, neither, costs two loads and no call.
func (l *loc) mayAwait() bool { return !l.awaited.Load() || l.awaitOpen.Load() }

// joinAwait makes a dispose at l wait while the first dispose's wait at l
// lasts: many goroutines may dispose at one site (each of a hundred
// concurrent Remove calls deletes its entry), and the late partner can
// only reach its location while none of them has. They go on together
// when the wait ends. The first wait has paid the budget for the time.
func (e *engine) joinAwait(l *loc, g uint64) bool {
	e.awaits.Add(1)
	start := e.clk.now()
	ns := int64(0)
	for ns < e.params.MaxDelayNs && l.awaitOpen.Load() && !anyReached(l.awaits) && !e.holding(l) {
		e.clk.sleep(awaitStepNs)
		ns = e.clk.now() - start
	}
	e.logAwait(l, g, ns)
	return true
}

// holding reports whether a delay is in progress at a live location that
// the dispose at l does not wait for: that delay holds its goroutine so that
// its partner comes first, and the goroutine disposing at l may be that
// partner (a close path that passes l before the partner's own dispose).
// The wait is a delay of the partner's side, and of two sides only the one
// already delayed is held (the placement rule): the dispose does not wait,
// or stops waiting.
func (e *engine) holding(l *loc) bool {
	if e.cfg.ablate.Has(abi.AblateInterference) || e.active.Load() == 0 {
		return false
	}
	for _, o := range e.locs {
		if o.active.Load() > 0 && !slices.Contains(l.awaits, o) {
			return true
		}
	}
	return false
}

// awaitStepNs is how often a waiting dispose looks for its partner.
const awaitStepNs = int64(time.Millisecond)

// anyReached reports whether one of the locations has been reached.
func anyReached(locs []*loc) bool {
	for _, a := range locs {
		if a.instances.Load() > 0 {
			return true
		}
	}
	return false
}

// before handles hook.Before for site l: the delay of l, when l is a live
// delay location, is decided here, before the lock that guards l is
// taken, and l is marked hoisted so that the access does not delay again.
// The object is not known yet (0): no reorder records for this delay.
func (e *engine) before(l *loc) {
	if e.stopped.Load() {
		return
	}
	if len(l.awaits) > 0 && l.mayAwait() {
		// A dispose guarded by a lock waits for its late partner before
		// the lock: under it, the partner could not get past the same
		// lock to reach its location.
		if !l.guarded.Load() {
			l.guarded.Store(true)
		}
		e.awaitLate(l, lcc.Goid())
	}
	if !l.isLoc {
		return
	}
	if !l.hoisted.Load() {
		l.hoisted.Store(true)
	}
	if !l.dead.Load() {
		e.maybeDelay(l, lcc.Goid(), 0)
	}
}

// maybeDelay decides whether to delay this instance of l and does it.
func (e *engine) maybeDelay(l *loc, g uint64, obj uintptr) {
	n := l.instances.Add(1) - 1
	p := l.prob()
	if p <= 0 {
		return
	}
	if a := l.active.Load(); a > 0 && !e.cfg.ablate.Has(abi.AblateDecay) {
		// The delays in progress here count as decayed already: a burst
		// of goroutines reaching ℓ1 at once gets the delays the decay
		// rule gives one after another (ten at λ = 0.1), not one each.
		if p = plans.Decayed(p, e.params.Decay*float64(a)); p <= 0 {
			l.skipProb.Add(1)
			e.logSkip(l, g, n, abi.SkipProbability, 0)
			return
		}
	}
	if p < 1 && uniform(e.cfg.seed, l.site, n) >= p {
		l.skipProb.Add(1)
		e.logSkip(l, g, n, abi.SkipProbability, 0)
		return
	}
	if h := decisionHook.Load(); h != nil {
		(*h)(l.site)
	}
	d := l.delayNs
	if !e.cfg.ablate.Has(abi.AblateInterference) && (len(l.interf) > 0 || len(l.yields) > 0 || e.active.Load() > 0) {
		// Two delays cancel only where they overlap. The goroutine held at
		// ℓ*, if it is ℓ1's partner, reaches ℓ2 once released: ℓ1 is
		// skipped when that release comes after ℓ1's delayed access (the
		// thesis's direction). A delay here, if this goroutine is the
		// partner of the delay in progress at ℓ*, holds it past that
		// delay's access: skipped when it would (the placement rule). A
		// delay in progress that ends within the slack protects nothing:
		// its access comes now either way.
		now, slack := e.clk.now(), max(e.params.SlackNs, hbMinSlackNs)
		outlasts := func(o *loc, rem int64) bool {
			return rem >= slack && d > rem-slack && slices.Contains(l.yields, o)
		}
		for _, o := range l.interf {
			if o.active.Load() == 0 {
				continue
			}
			if rem := o.until.Load() - now; rem > d-slack || outlasts(o, rem) {
				e.skipInt.Add(1)
				e.logSkip(l, g, n, abi.SkipInterference, o.site)
				return
			}
		}
		for _, o := range l.yields {
			if o.active.Load() == 0 || slices.Contains(l.interf, o) {
				continue
			}
			if outlasts(o, o.until.Load()-now) {
				e.skipPart.Add(1)
				e.logPartnerSkip(l, g, n, o)
				return
			}
		}
		// A delay of an observed use/dispose or init/use pair that still
		// waits for its partner holds every other location: the partner's
		// path to ℓ2 may pass through goroutines the interference set
		// cannot name (a chain of channel hand-offs that ends in the
		// disposing goroutine), and a delay there would hold the partner
		// past the delayed access (holdsAll says which locations). Not in
		// basic mode, which has no placement rule.
		if e.basic == nil && !e.cfg.ablate.Has(abi.AblateBasic) {
			for _, o := range e.locs {
				if o == l || !o.holdsAll || o.active.Load() == 0 || !o.waiting() || slices.Contains(l.interf, o) || slices.Contains(l.yields, o) {
					continue
				}
				if rem := o.until.Load() - now; rem >= slack && d > rem-slack {
					e.skipPart.Add(1)
					e.logPartnerSkip(l, g, n, o)
					return
				}
			}
		}
	}
	if e.total.Add(d) > e.params.MaxDelayPerRunNs {
		e.total.Add(-d)
		e.skipCapR.Add(1)
		e.logSkip(l, g, n, abi.SkipCapRun, 0)
		return
	}
	e.mu.Lock()
	if e.perG[g]+d > e.params.MaxDelayPerGoroutineNs {
		e.mu.Unlock()
		e.total.Add(-d)
		e.skipCapG.Add(1)
		e.logSkip(l, g, n, abi.SkipCapGoroutine, 0)
		return
	}
	e.perG[g] += d
	e.mu.Unlock()

	id := e.nextID.Add(1)
	e.fmu.Lock()
	e.flight = append(e.flight, inflight{id: id, site: l.site, g: g, obj: obj})
	e.fmu.Unlock()
	// The planned end is set before the delay counts as in progress, so
	// that a decision that sees it in progress sees its end too.
	l.startAt.Store(e.clk.now())
	for end := e.clk.now() + d; ; {
		old := l.until.Load()
		if end <= old || l.until.CompareAndSwap(old, end) {
			break
		}
	}
	l.active.Add(1)
	e.active.Add(1)
	l.delays.Add(1)
	e.nDelays.Add(1)
	ts := e.clk.now()
	l.mu.Lock()
	slot := l.nrec % recentDelays
	l.recent[slot] = delayRec{id: id, g: g, ns: d, ts: ts}
	l.nrec++
	l.mu.Unlock()
	e.logDelay(l, g, n, id, obj, d, ts)

	e.clk.sleep(d)

	te := e.clk.now()
	l.mu.Lock()
	if r := &l.recent[slot]; r.id == id {
		r.te, r.ended = te, true
	}
	l.mu.Unlock()
	// The delayed goroutine's own delay is not a stall: its previous
	// watched event is the end of the delay.
	e.gtab.swap(g, te)
	np := p
	if !e.cfg.ablate.Has(abi.AblateDecay) {
		np = e.decay(l)
	}
	e.logEnd(l, g, id, te-ts, te, np)
	for {
		old := e.lastEnd.Load()
		if te <= old || e.lastEnd.CompareAndSwap(old, te) {
			break
		}
	}
	e.fmu.Lock()
	for i, f := range e.flight {
		if f.id == id {
			e.flight = append(e.flight[:i], e.flight[i+1:]...)
			break
		}
	}
	e.fmu.Unlock()
	l.active.Add(-1)
	e.active.Add(-1)
}

// decay lowers l's probability by λ (plans.Decayed) and takes l out of S
// when it reaches 0.
func (e *engine) decay(l *loc) float64 {
	lambda := e.params.Decay
	for {
		old := l.probBits.Load()
		p := plans.Decayed(math.Float64frombits(old), lambda)
		if l.probBits.CompareAndSwap(old, math.Float64bits(p)) {
			if p == 0 {
				e.kill(l)
			}
			return p
		}
	}
}

// kill takes l out of S for the rest of the run. In basic mode the hooks
// do not look at l.on (and l.partnerOf may grow under online.mu): only
// dead counts.
func (e *engine) kill(l *loc) {
	l.dead.Store(true)
	if e.basic == nil {
		e.refreshOn(l)
	}
}

// inferHB implements TSVD §3.4.4 for an access to partner site l2 by
// goroutine g2 at t2 whose previous watched event was at t0 (see
// docs/report-format.md, "Happens-before inference"): the pair (ℓ1, ℓ2)
// is pruned when a finished delay D = [ts, te] at ℓ1 in a goroutine other
// than g2 satisfies
//
//	t0 < te                        the gap before ℓ2 overlaps D,
//	t2 − t0 ≥ δhb · (te − ts)      the gap is proportional to D,
//	te ≤ t2 ≤ te + max(te − ts, 2 ms)   ℓ2 comes right after D ends,
//
// and ℓ1's delay has already been lengthened once (loc.grown): a partner
// that comes right after a delay ends may just have been slower than the
// preparation run said. Otherwise — and whenever ℓ2 comes right after D
// without the first two conditions — the pair gets a late record
// (abi.EvLate), from which ApplyRun grows ℓ1's delay (plans.GrowDelay).
func (e *engine) inferHB(l2 *loc, g2 uint64, t0, t2 int64) {
	for _, ref := range l2.partnerOf {
		l1 := ref.first
		if l1.delays.Load() == 0 {
			continue
		}
		pr := &l1.pairs[ref.pair]
		if pr.pruned.Load() {
			continue
		}
		var best, after delayRec
		found, foundAfter := false, false
		l1.mu.Lock()
		for i := 0; i < min(l1.nrec, recentDelays); i++ {
			r := l1.recent[i]
			if !r.ended || r.g == g2 {
				continue
			}
			d := r.te - r.ts
			if r.te > t2 || t2 > r.te+max(d, hbMinSlackNs) {
				continue // ℓ2 does not come right after D
			}
			if !foundAfter || r.te > after.te {
				after, foundAfter = r, true
			}
			if t0 < r.te && float64(t2-t0) >= e.params.HBFactor*float64(d) {
				if !found || r.te > best.te {
					best, found = r, true
				}
			}
		}
		l1.mu.Unlock()
		if foundAfter && (!found || !l1.grown) {
			if pr.late.CompareAndSwap(false, true) {
				e.logLate(l1, pr.second, g2, after, t2)
			}
			continue
		}
		if !found || !pr.pruned.CompareAndSwap(false, true) {
			continue
		}
		e.hbPrunes.Add(1)
		e.logHB(l1, pr.second, g2, best, t2-t0, t2)
		all := true
		for j := range l1.pairs {
			if !l1.pairs[j].pruned.Load() {
				all = false
				break
			}
		}
		if all {
			e.kill(l1)
		}
	}
}

// noteReorder logs that goroutine g reached watched site at t with
// object obj while a delay on the same object was in progress in another
// goroutine: the delay let g touch the object before the delayed access,
// which is how a delayed init exposes a use-before-init. Attribution uses
// it when the panic comes later in g (a check that saw nil took the wrong
// branch and closed a channel twice, say).
func (e *engine) noteReorder(site uint32, g uint64, obj uintptr, t int64) {
	var hits [8]inflight
	n := 0
	e.fmu.Lock()
	for i := range e.flight {
		f := &e.flight[i]
		// Log each (delay, goroutine, site) once in a row: a loop
		// spinning on the slot during the delay writes one line.
		if f.obj == obj && f.g != g && n < len(hits) && (f.lastG != g || f.lastSite != site) {
			f.lastG, f.lastSite = g, site
			hits[n] = *f
			n++
		}
	}
	e.fmu.Unlock()
	for _, f := range hits[:n] {
		e.logReorder(f, site, g, obj, t)
	}
}

// finish stops injecting, drains delays in progress and the grace period,
// and logs the final state.
func (e *engine) finish() {
	e.finishOnce.Do(func() {
		e.stopped.Store(true)
		for _, l := range e.table {
			l.on.Store(0)
		}
		start := e.clk.now()
		// A delay in progress ends within its length; allow scheduling
		// slack on top so a stuck sleeper cannot hang the exit forever.
		limit := start + e.maxLocDelay + int64(time.Second)
		for e.active.Load() > 0 && e.clk.now() < limit {
			e.clk.sleep(int64(time.Millisecond))
		}
		// The grace period lets delayed goroutines perform their delayed
		// access while the process is alive; it ends early once none of
		// them is still running or runnable (they finished, or they block
		// on something the test will not provide any more), after at least
		// graceMinNs past the last delay.
		if last := e.lastEnd.Load(); last > 0 {
			deadline := last + e.params.GraceNs
			for now := e.clk.now(); now < deadline; now = e.clk.now() {
				running := e.delayedRunning
				if e.runningHook != nil {
					running = e.runningHook
				}
				if now >= last+graceMinNs && !running() {
					break
				}
				e.clk.sleep(min(graceStepNs, deadline-now))
			}
		}
		e.logFinish(e.clk.now() - start)
	})
}

// Grace period bounds: the least wait after the last delay ended, and the
// polling step.
const (
	graceMinNs  = int64(5 * time.Millisecond)
	graceStepNs = int64(2 * time.Millisecond)
)

// delayedRunning reports whether a goroutine this run delayed, other than
// the caller, is running, runnable or in a system call, from a goroutine
// dump (Finish only: it allocates).
func (e *engine) delayedRunning() bool {
	e.mu.Lock()
	gs := make(map[uint64]bool, len(e.perG))
	for g := range e.perG {
		gs[g] = true
	}
	e.mu.Unlock()
	delete(gs, lcc.Goid())
	if len(gs) == 0 {
		return false
	}
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return anyActive(buf, gs)
}

// anyActive reports whether a goroutine of gs has a header in the dump
// with a state that is not blocked: "goroutine 7 [running]:",
// "[runnable]", "[syscall]" (also with ", N minutes" and the like).
func anyActive(dump []byte, gs map[uint64]bool) bool {
	for _, line := range bytes.Split(dump, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("goroutine "))
		if !ok {
			continue
		}
		sp := bytes.IndexByte(rest, ' ')
		if sp < 0 {
			continue
		}
		id, err := strconv.ParseUint(string(rest[:sp]), 10, 64)
		if err != nil || !gs[id] {
			continue
		}
		st := rest[sp+1:]
		if i := bytes.IndexByte(st, '['); i >= 0 {
			st = st[i+1:]
		}
		// Waiting for a lock counts as active: the delayed access may be
		// right behind it (a delay hoisted before Lock).
		for _, s := range activeStates {
			if bytes.HasPrefix(st, []byte(s)) {
				return true
			}
		}
	}
	return false
}

// activeStates are the goroutine dump states of a goroutine that is, or is
// about to be, doing something.
var activeStates = [...]string{"running", "runnable", "syscall", "semacquire", "sync.Mutex.Lock", "sync.RWMutex.Lock", "sync.RWMutex.RLock"}

// gtable remembers, per goroutine, the time of its latest watched event.
// It is direct-mapped by goroutine id with the rest of the id kept as a
// tag, one atomic word per slot: no lock, no allocation; a collision only
// forgets an older goroutine's event (HB inference then skips it).
type gtable struct {
	slots [1 << gtabBits]atomic.Uint64
}

const (
	gtabBits = 13
	timeBits = 44 // microseconds: 200 days
	tagBits  = 64 - timeBits
)

// swap records that goroutine g had a watched event at now (ns) and
// returns the time of its previous one, at microsecond resolution.
func (t *gtable) swap(g uint64, now int64) (prev int64, ok bool) {
	tag := (g >> gtabBits) & (1<<tagBits - 1)
	us := uint64(now/1000+1) & (1<<timeBits - 1)
	old := t.slots[g&(1<<gtabBits-1)].Swap(tag<<timeBits | us)
	if old == 0 || old>>timeBits != tag {
		return 0, false
	}
	return int64((old&(1<<timeBits-1))-1) * 1000, true
}

// mix64 is the splitmix64 finalizer.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// uniform is the random number in [0,1) that decides the n-th dynamic
// instance of site under seed: a counter-based splitmix64 stream per
// (seed, site), so the decision for an instance does not depend on how
// goroutines interleave with other sites.
func uniform(seed uint64, site uint32, n uint64) float64 {
	key := mix64(seed ^ mix64(uint64(site)))
	return float64(mix64(key+n*0xd1b54a32d192ed03)>>11) / (1 << 53)
}
