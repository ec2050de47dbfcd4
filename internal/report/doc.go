// Package report is the wafl side of a detection run: it parses the crash
// output of a test binary (every goroutine's stack, the panic and the
// panicking goroutine), reads the run log the inject runtime wrote,
// attributes a MEMORDER panic to a delay the run injected, describes the
// run for the plan update (the delays, happens-before prunes, the run
// record and the bug; package plans decides what they change) and writes
// bug reports as JSON, text and SARIF 2.1.0.
//
// Outcome is the entry point the CLI calls once per detection run;
// RunResult.PlanOutcome is what plans.Plan.ApplyRun folds into the plan for
// the next run. The formats are documented in docs/report-format.md.
package report
