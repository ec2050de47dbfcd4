// Package inject is the detection-run runtime: it loads a test's plan,
// injects delays at planned sites with decaying probability, skips delays
// while an interfering delay is in progress, infers happens-before from
// proportional stalls, caps total delay, drains delayed goroutines before
// exit and logs what it did so that a crash can be attributed to a delay
// (WAFL thesis §2, §4.4, §5; TSVD §3.4).
//
// The hook At costs a bounds check, a nil check and an atomic load at a
// site the plan does not mention or whose location left S. The rules
// (probability decay, interference, caps, happens-before inference,
// reorders, the drain) and the JSON-lines run log are specified in
// docs/report-format.md; package internal/report reads the log on the wafl
// side. Every random decision comes from WAFL_SEED: the n-th dynamic
// instance of a site draws from a counter-based stream keyed by (seed,
// site), so a seed and a plan repeat the same decisions.
package inject
