// Package inject is the detection-run runtime: it loads a test's plan,
// injects delays at planned sites with decaying probability, skips delays
// while an interfering delay is in progress, infers happens-before from
// proportional stalls, caps total delay, drains delayed goroutines before
// exit and logs what it did so that a crash can be attributed to a delay
// (WAFL thesis §2, §4.4, §5; TSVD §3.4).
package inject
