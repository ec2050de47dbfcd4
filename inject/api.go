package inject

import (
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// Environment variables that drive a detection run (docs/design.md).
const (
	EnvMode  = "WAFL_MODE"  // "detect" enables the runtime
	EnvPlan  = "WAFL_PLAN"  // the test's plan file
	EnvSeed  = "WAFL_SEED"  // seed of every random decision (decimal uint64)
	EnvRun   = "WAFL_RUN"   // run number, copied into the log
	EnvLog   = "WAFL_LOG"   // JSON-lines log, appended to record by record
	EnvCrash = "WAFL_CRASH" // file given to runtime/debug.SetCrashOutput
	// EnvAblate switches parts of the algorithm off, for ablation studies
	// (thesis Table 6.4): a comma-separated list of "interference" (never
	// skip a delay for an interfering delay in progress), "hb" (no
	// happens-before inference) and "decay" (probabilities never decay).
	EnvAblate = "WAFL_ABLATE"
)

// ModeDetect is the value of WAFL_MODE for detection runs.
const ModeDetect = "detect"

// ExitSetup is the exit status of a test binary whose detection run could
// not start (unreadable plan, bad WAFL_SEED, unwritable log). Setup prints
// the cause to standard error, prefixed "wafl: detect:".
const ExitSetup = 3

var (
	// table maps a site id to its state; nil for sites the plan does not
	// mention. Written once by Setup before any instrumented code runs.
	table []*loc
	eng   *engine
)

// Setup reads the detection-run environment (WAFL_MODE=detect, WAFL_PLAN,
// WAFL_SEED, WAFL_RUN, WAFL_LOG, WAFL_CRASH, WAFL_ABLATE) and loads the
// plan. It reports whether detection is active; package record calls it
// from its init. Without WAFL_MODE=detect it does nothing and returns
// false. When the environment asks for detection but the run cannot be set
// up, Setup prints the cause and exits with status ExitSetup: a detection
// run without its plan would silently test nothing. Calls after the first
// return the first call's answer.
func Setup() bool {
	setupOnce.Do(func() {
		if os.Getenv(EnvMode) != ModeDetect {
			return
		}
		cfg, err := configFromEnv()
		if err == nil {
			var e *engine
			e, err = newEngine(cfg, realClock())
			if err == nil {
				eng, table = e, e.table
				setupOK = true
				e.logSetup()
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "wafl: detect: %v\n", err)
			os.Exit(ExitSetup)
		}
	})
	return setupOK
}

var (
	setupOnce sync.Once
	setupOK   bool
)

// At is called by the record hooks, in detection mode only, before every
// instrumented access: site is the site id, obj the object. At a site the
// plan does not mention it costs a bounds check and a nil check; at a
// planned site it may sleep (see package documentation).
func At(site uint32, obj unsafe.Pointer) {
	t := table
	if uint(site) < uint(len(t)) {
		if l := t[site]; l != nil && l.on.Load() != 0 {
			eng.at(l, uintptr(obj))
		}
	}
}

// Finish drains: it waits for delays in progress, then until a grace
// period (Params.GraceNs) has passed since the last delay ended, so that
// delayed goroutines perform their delayed access while the process is
// still alive, and writes the run's final state to the log. After Finish
// no more delays are injected. record.Finish and record.Exit call it; it
// is safe to call more than once.
func Finish() {
	if e := eng; e != nil {
		e.finish()
	}
}
