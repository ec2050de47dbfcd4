package inject

import (
	"sync/atomic"
	"unsafe"
)

var (
	// table maps a site id to its state; nil for sites the plan does not
	// mention. Written once by Setup before any instrumented code runs.
	table siteTable
	eng   *engine
)

// Setup reads the detection-run environment (WAFL_PLAN, WAFL_SEED,
// WAFL_RUN, WAFL_LOG, WAFL_CRASH, WAFL_ABLATE; abi.Env*), takes those
// variables out of the environment, loads the plan and opens the log.
// Package hook calls it once, from its init, when WAFL_MODE=detect, before
// any instrumented code runs. On an error hook prints the cause and exits
// with status abi.ExitSetup: a detection run without its plan would
// silently test nothing.
func Setup() error {
	cfg, err := configFromEnv()
	if err != nil {
		return err
	}
	e, err := newEngine(cfg, realClock())
	if err != nil {
		return err
	}
	eng, table = e, e.fast
	e.logSetup()
	return nil
}

// At is called by the hooks, in detection mode only, before every
// instrumented access: site is the site id, obj the object. At a site the
// plan does not mention it costs one probe of a small hash table; at a
// planned site it may sleep (see package documentation).
func At(site uint32, obj unsafe.Pointer) {
	if l := table.find(site); l != nil && l.on.Load() != 0 {
		eng.at(l, uintptr(obj))
	}
}

// Before is called before the Lock/RLock call that guards site: the
// delay planned for site is decided and injected here, outside the
// critical section, and site itself is no longer delayed (hoisting).
func Before(site uint32) {
	if l := table.find(site); l != nil && l.on.Load() != 0 {
		eng.before(l)
	}
}

// Finish drains: it waits for delays in progress, then until a grace
// period (Params.GraceNs) has passed since the last delay ended, so that
// delayed goroutines perform their delayed access while the process is
// still alive, and writes the run's final state to the log. After Finish
// no more delays are injected. hook.Finish and hook.Exit call it; it is
// safe to call more than once.
func Finish() {
	if e := eng; e != nil {
		e.finish()
	}
}

// decisionHook, when set, runs in the delay decision of every planned
// instance that passed the probability draw, before the delay is counted
// or logged. Only inject's tests set it (export_test.go), to stop a
// goroutine deterministically at the point a crash elsewhere would find
// it; in a real run it is nil.
var decisionHook atomic.Pointer[func(site uint32)]
