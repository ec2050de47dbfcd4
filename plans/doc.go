// Package plans defines the plan file: the candidate set S of one test with
// per-location delay lengths, probabilities, candidate pairs and
// interference sets, plus the parameters and provenance that produced it
// and the state detection runs update (WAFL thesis §4.1–4.4).
//
// plans is the one owner of plan state: only its functions change a plan.
// It holds the parameter defaults and how a user's choices override them
// (DefaultParams, Overrides), the decay rule (Decayed), how a finished
// detection run changes a plan (ApplyRun, from a RunOutcome), how an
// analysis becomes a plan (New, SetInterference), how a plan learns from
// recording runs (MergeLearned, AddDetected), the copy one run reads
// (ForRun), and how a plan follows its test's build (SetBuild, MovePaths,
// Remap). Other packages describe what happened; only plans decides what
// that does to a plan. TestOnlyPlansChangesAPlan enforces this.
package plans
