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
	case PanicNilDeref, PanicNilMap, PanicSendClosed, PanicCloseClosed, PanicCloseNil, PanicWGNegative, PanicWGReuse:
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

// RunLogRecord is the shape of one kind of run log record.
type RunLogRecord struct {
	Ev string
	// Keys are the object's keys besides "ev" and "t", in the order the
	// runtime writes them; Optional ones may be absent.
	Keys     []string
	Optional []string
}

// RunLog is the run log's record table, one entry per kind.
var RunLog = [...]RunLogRecord{
	{Ev: EvSetup, Keys: []string{"unix_ns", "pid", "run", "seed", "seed_set", "plan", "locations", "live_locations", "ablate"}},
	{Ev: EvDelay, Keys: []string{"id", "site", "g", "obj", "ns", "n"}},
	{Ev: EvEnd, Keys: []string{"id", "site", "g", "ns", "p"}},
	{Ev: EvSkip, Keys: []string{"site", "g", "n", "why"}, Optional: []string{"by"}},
	{Ev: EvHB, Keys: []string{"first", "second", "id", "g", "delay_g", "gap", "delay_ns"}},
	{Ev: EvReorder, Keys: []string{"first", "second", "id", "g", "delay_g", "obj"}},
	{Ev: EvPanic, Keys: []string{"site", "g", "obj", "kind"}},
	{Ev: EvLate, Keys: []string{"first", "second", "id", "g", "need_ns", "delay_ns"}},
	{Ev: EvTrap, Keys: []string{"first", "second", "kind", "obj", "gap", "g", "delay_ns"}},
	{Ev: EvAwait, Keys: []string{"site", "g", "ns"}},
	{Ev: EvLoc, Keys: []string{"site", "p", "live", "delays", "instances", "skip_prob"}},
	{Ev: EvFinish, Keys: []string{"delays", "delay_ns", "skip_interference", "skip_cap_goroutine", "skip_cap_run", "hb", "reorders", "drain_ns", "awaits"}},
}
