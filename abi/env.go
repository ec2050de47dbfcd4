package abi

// Environment variables through which wafl drives an instrumented test
// binary (docs/design.md). The runtime removes them from its environment
// once read, so processes the test starts do not inherit them.
const (
	EnvMode  = "WAFL_MODE"  // ModeRecord or ModeDetect; unset: hooks off
	EnvTrace = "WAFL_TRACE" // record: the raw spill file the recorder writes
	EnvPlan  = "WAFL_PLAN"  // detect: the test's plan file
	EnvSeed  = "WAFL_SEED"  // detect: seed of every random decision (decimal uint64)
	EnvRun   = "WAFL_RUN"   // detect: run number, copied into the log
	EnvLog   = "WAFL_LOG"   // detect: JSON-lines log, appended to record by record
	EnvCrash = "WAFL_CRASH" // detect: file given to runtime/debug.SetCrashOutput
	// EnvAblate switches parts of the algorithm off, for ablation studies
	// (thesis Table 6.4): Ablation.String's comma-separated part names.
	EnvAblate = "WAFL_ABLATE"
	// EnvThin set to "off" makes the recorder keep every use row
	// (record's thinning off).
	EnvThin = "WAFL_THIN"
	// EnvNetNS, set (to any value), says that the process started in a
	// network namespace of its own: the runtime brings its loopback
	// interface up before any instrumented package initializes (Linux).
	EnvNetNS = "WAFL_NETNS"
)

// Values of EnvMode.
const (
	ModeRecord = "record" // preparation run: events go to the spill file
	ModeDetect = "detect" // detection run: delays from the plan
	// ModeDetectRecord: a detection run that also records its events
	// into EnvTrace, so that its near misses can add candidates to the
	// plan (docs/algorithm.md, "Plans that keep learning").
	ModeDetectRecord = "detect-record"
)

// Exit statuses of a test binary whose run could not start.
const (
	// ExitSetup: a detection run could not set up (unreadable plan, bad
	// WAFL_SEED, unwritable log). The cause is on standard error, prefixed
	// "wafl: detect:".
	ExitSetup = 3
	// ExitRecordSetup: a preparation run could not start recording (bad
	// WAFL_MODE, no or unwritable WAFL_TRACE). The cause is on standard
	// error, prefixed "wafl runtime:".
	ExitRecordSetup = 2
	// ExitNetNS: the process could not bring up the loopback interface of
	// its network namespace (EnvNetNS). The cause is on standard error,
	// prefixed "wafl runtime:".
	ExitNetNS = 4
)

// Env returns "NAME=value", for building a child's environment.
func Env(name, value string) string { return name + "=" + value }

// MaxSeed is the largest seed wafl uses or accepts (EnvSeed, --seed): 2^53
// − 1, the largest integer a float64 holds exactly, so that the seeds in
// plans, run logs and JSON reports survive readers that parse numbers as
// float64 (JavaScript's). Drawn seeds stay below 2^52, leaving room for
// the run number added to them.
const MaxSeed = 1<<53 - 1
