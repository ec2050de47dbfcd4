package inject

import "unsafe"

// Setup reads the detection-run environment (WAFL_MODE=detect, WAFL_PLAN,
// WAFL_SEED, WAFL_RUN, WAFL_LOG, WAFL_CRASH) and loads the plan. It reports
// whether detection is active; package record calls it from its init.
func Setup() bool { return false }

// At is called by the record hooks, in detection mode only, before every
// instrumented access: site is the site id, obj the object.
func At(site uint32, obj unsafe.Pointer) {}

// Finish drains: it waits for delays in progress plus a grace period and
// writes the run's final state to the log. record.Finish and record.Exit
// call it.
func Finish() {}
