package abi

// The run log is the JSON-lines file (EnvLog) a detection run appends to,
// one object per line, written by package inject as things happen and read
// by package internal/report (docs/report-format.md, "Run log"). Every
// object has "ev", the record kind, and "t", its time in ns since setup;
// RunLog lists each kind's other keys.

// Run log record kinds: the "ev" field of every line.
const (
	EvSetup = "setup" // first line: run, seed, plan, start time, pid
	EvDelay = "delay" // a delay started
	EvEnd   = "end"   // a delay ended (the delayed access follows)
	EvSkip  = "skip"  // a delay was skipped (interference, a cap or probability)
	EvHB    = "hb"    // a pair was pruned by happens-before inference
	// EvReorder: a watched site touched the object of a delay in progress
	// in another goroutine (the delay reordered the accesses).
	EvReorder = "reorder"
	// EvPanic: an instrumented operation is about to panic with a
	// MEMORDER panic (close of a closed or nil channel, send on a closed
	// channel, a nil dereference or nil map write at a site the plan
	// mentions); written before the runtime panics, so that a panic user
	// code recovers is still seen.
	EvPanic = "panic"
	// EvLate: a partner access came right after a delay at ℓ1 ended (the
	// delay was too short, or the partner waited for it): ApplyRun grows
	// ℓ1's delay; happens-before inference prunes only a grown delay.
	EvLate = "late"
	// EvTrap: a basic-mode run (WAFL_ABLATE=basic) found a candidate
	// pair online and added it to its trap set; the wafl process adds it
	// to the plan.
	EvTrap = "trap"
	// EvAwait: the first dispose of the run at a partner site waited for
	// a use-after-dispose location that had not been reached yet (a late
	// partner; inject engine.awaitLate).
	EvAwait  = "await"
	EvLoc    = "loc"    // final state of one location, written by Finish
	EvFinish = "finish" // last line: totals, written by Finish
)

// Skip reasons: the "why" field of EvSkip records.
const (
	SkipInterference = "interference"  // an interfering delay was in progress
	SkipCapGoroutine = "cap-goroutine" // MaxDelayPerGoroutineNs reached
	SkipCapRun       = "cap-run"       // MaxDelayPerRunNs reached
	SkipProbability  = "probability"   // the draw said no (P < 1)
	// SkipPartner: a delay of another location was in progress whose
	// partner's path this location lies on (it is in that location's
	// interference set, or it is the partner ℓ2 of one of its pairs, or
	// that delay still waits for its partner to be reached): of
	// the two sides only the one already delayed, the side that must lose
	// the race, stays delayed. The record names the holding location (by),
	// its delay (id) and the goroutine it holds (delay_g).
	SkipPartner = "partner"
)

// PanicKind classifies a Go panic: the "kind" field of EvPanic records,
// which the runtime writes before an instrumented operation panics, and
// the kind the wafl process gives a crash it parses (internal/report).
// This is the one list of them.
type PanicKind string

// The panic kinds a MEMORDER bug produces, and the rest.
const (
	// PanicNilDeref: invalid memory address or nil pointer dereference
	// (also a nil func call). The runtime logs it when a dereferencing
	// use (hook.Deref) finds its slot nil at a site the plan mentions,
	// after the site's event and its delay.
	PanicNilDeref    PanicKind = "nil-deref"
	PanicNilMap      PanicKind = "nil-map"      // assignment to entry in nil map
	PanicSendClosed  PanicKind = "send-closed"  // send on closed channel
	PanicCloseClosed PanicKind = "close-closed" // close of closed channel
	PanicCloseNil    PanicKind = "close-nil"    // close of nil channel
	// PanicNilAssert: a type assertion v.(T) of a nil interface ("interface
	// conversion: … is nil, not T"), the nil dereference of an interface
	// value: what a lookup of a sync.Map entry that was deleted panics
	// with. Only crashes have it; the runtime does not log it.
	PanicNilAssert PanicKind = "nil-assert"
	// A sync.WaitGroup used out of order: Done before the matching Add,
	// Add for a new round before the previous Wait has returned (or
	// concurrently with it). Only crashes have these; the runtime does
	// not log them.
	PanicWGNegative PanicKind = "waitgroup-negative" // sync: negative WaitGroup counter
	PanicWGReuse    PanicKind = "waitgroup-reuse"    // sync: WaitGroup is reused before previous Wait has returned / misuse
	PanicTimeout    PanicKind = "timeout"            // the testing package's -test.timeout panic
	PanicOther      PanicKind = "other"              // any other panic or fatal error
)

// Memorder reports whether k is one of the panics a MEMORDER bug causes.
func (k PanicKind) Memorder() bool {
	switch k {
	case PanicNilDeref, PanicNilMap, PanicSendClosed, PanicCloseClosed, PanicCloseNil, PanicNilAssert, PanicWGNegative, PanicWGReuse:
		return true
	}
	return false
}

// Kinds of dereferencing use: the kind argument of hook.Deref, which the
// generated helpers pass as a constant (instrument/derefs.go).
const (
	UseDeref    uint8 = 1 // the slot's value is dereferenced (pointer, interface, func)
	UseMapWrite uint8 = 2 // the slot's map is written
)

// MaxPanicRecords bounds the EvPanic lines of one run.
const MaxPanicRecords = 1000

// Bounds on the lines of one run: skip and reorder lines beyond them are
// not written; the totals in the EvLoc and EvFinish records stay exact.
const (
	MaxSkipRecords     = 10000 // EvSkip lines for interference and caps
	MaxProbSkipRecords = 1000  // EvSkip lines for SkipProbability
	MaxReorderRecords  = 10000 // EvReorder lines
)

// Run log keys: the fields of the records. Every record has KeyEv (its
// kind, an Ev* name) and KeyT (its time in ns since setup); RunLog lists
// which others each kind has.
const (
	KeyEv = "ev"
	KeyT  = "t"

	KeyUnixNs        = "unix_ns"        // setup: wall-clock start
	KeyMonoNs        = "mono_ns"        // setup: the runtime's monotonic clock at the start, the trace's time base
	KeyPid           = "pid"            // setup: process id
	KeyRun           = "run"            // setup: run number (EnvRun)
	KeySeed          = "seed"           // setup: the run's seed
	KeySeedSet       = "seed_set"       // setup: the seed came from EnvSeed
	KeyPlan          = "plan"           // setup: the plan's path
	KeyLocations     = "locations"      // setup: the plan's locations
	KeyLiveLocations = "live_locations" // setup: those still in S
	KeyAblate        = "ablate"         // setup: the ablated parts (Ablation.String)

	KeyID      = "id"      // a delay's id, unique in the run
	KeySite    = "site"    // a site id
	KeyG       = "g"       // a goroutine id
	KeyObj     = "obj"     // an object's address
	KeyNs      = "ns"      // a length in ns
	KeyN       = "n"       // a site's dynamic instance
	KeyP       = "p"       // a location's probability
	KeyWhy     = "why"     // skip: a Skip* reason
	KeyBy      = "by"      // skip: the interfering or holding location
	KeyFirst   = "first"   // a pair's ℓ1
	KeySecond  = "second"  // a pair's ℓ2
	KeyDelayG  = "delay_g" // the delayed goroutine
	KeyGap     = "gap"     // τ2 − τ1 in ns
	KeyDelayNs = "delay_ns"
	KeyNeedNs  = "need_ns" // late: how long after the delay's start the partner came
	KeyKind    = "kind"    // panic: a PanicKind; trap: a pair kind

	KeyLive      = "live"      // loc: still in S
	KeyDelays    = "delays"    // loc, finish: delays injected
	KeyInstances = "instances" // loc: dynamic instances reached
	KeySkipProb  = "skip_prob" // loc: delays skipped by probability

	KeySkipInterference = "skip_interference"  // finish: skips for interference
	KeySkipCapGoroutine = "skip_cap_goroutine" // finish: skips for the per-goroutine cap
	KeySkipCapRun       = "skip_cap_run"       // finish: skips for the per-run cap
	KeyHB               = "hb"                 // finish: pairs pruned by happens-before inference
	KeyReorders         = "reorders"           // finish: reorders seen
	KeyDrainNs          = "drain_ns"           // finish: time spent waiting for delayed goroutines
	KeyAwaits           = "awaits"             // finish: disposes that waited for a late partner
	KeySkipPartner      = "skip_partner"       // finish: skips on the partner's side of a delay in progress
)

// RunLogRecord is the shape of one kind of run log record.
type RunLogRecord struct {
	Ev string
	// Keys are the object's keys besides KeyEv and KeyT, in the order the
	// runtime writes them; Optional ones may be absent.
	Keys     []string
	Optional []string
}

// RunLog is the run log's record table, one entry per kind.
var RunLog = [...]RunLogRecord{
	{Ev: EvSetup, Keys: []string{KeyUnixNs, KeyMonoNs, KeyPid, KeyRun, KeySeed, KeySeedSet, KeyPlan, KeyLocations, KeyLiveLocations, KeyAblate}},
	{Ev: EvDelay, Keys: []string{KeyID, KeySite, KeyG, KeyObj, KeyNs, KeyN}},
	{Ev: EvEnd, Keys: []string{KeyID, KeySite, KeyG, KeyNs, KeyP}},
	{Ev: EvSkip, Keys: []string{KeySite, KeyG, KeyN, KeyWhy}, Optional: []string{KeyBy, KeyID, KeyDelayG}},
	{Ev: EvHB, Keys: []string{KeyFirst, KeySecond, KeyID, KeyG, KeyDelayG, KeyGap, KeyDelayNs}},
	{Ev: EvReorder, Keys: []string{KeyFirst, KeySecond, KeyID, KeyG, KeyDelayG, KeyObj}},
	{Ev: EvPanic, Keys: []string{KeySite, KeyG, KeyObj, KeyKind}},
	{Ev: EvLate, Keys: []string{KeyFirst, KeySecond, KeyID, KeyG, KeyNeedNs, KeyDelayNs}},
	{Ev: EvTrap, Keys: []string{KeyFirst, KeySecond, KeyKind, KeyObj, KeyGap, KeyG, KeyDelayNs}},
	{Ev: EvAwait, Keys: []string{KeySite, KeyG, KeyNs}},
	{Ev: EvLoc, Keys: []string{KeySite, KeyP, KeyLive, KeyDelays, KeyInstances, KeySkipProb}},
	{Ev: EvFinish, Keys: []string{KeyDelays, KeyDelayNs, KeySkipInterference, KeySkipCapGoroutine, KeySkipCapRun, KeyHB, KeyReorders, KeyDrainNs, KeyAwaits, KeySkipPartner}},
}
