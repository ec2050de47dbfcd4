// Package hook holds the entry points that instrumented code calls at
// every MEMORDER site (Init, Use, Dispose, Store, Fork, Adopt) and at the
// end of a run (Finish, Exit), and the runtime's one mode switch
// (docs/design.md, "Runtime ABI").
//
// The mode is chosen once, in init, from WAFL_MODE (abi.EnvMode), which is
// then taken out of the environment so that processes the test starts run
// with the hooks off: unset (hooks off), "record" (events go to package
// record's spill file WAFL_TRACE) or "detect" (package inject loads the
// plan; the hooks call inject.At). A run that cannot set up exits at once:
// status abi.ExitRecordSetup for a recording, abi.ExitSetup for a
// detection run.
//
// With the hooks off, Init, Dispose, Store, Use, Fork and Adopt inline to
// one atomic load and a branch; otherwise each makes one out-of-line call
// that dispatches to record.Add or inject.At. No hook makes its slot
// escape, and none allocates.
package hook
