// Package analyze turns a preparation-run trace into a plan: it builds the
// candidate set S with the near-miss window and fork vector clocks, learns
// per-location delay lengths and interference sets (WAFL thesis §3.1,
// §4.1–4.4), streaming over traces larger than memory.
//
// File analyzes an Arrow trace file (internal/trace); Run analyzes any
// Source of column batches (trace.Batch). Both return a validated
// *plans.Plan and Stats (events, objects, candidates, pair instances
// dropped by the near-miss window, by goroutine and by forks, warnings).
//
// One computation (analysis) runs pass 1 over the trace — counting rows,
// collecting fork edges (lcc.Forest answers fork order) — builds the plan
// from the pairs and runs pass 3 for the interference sets. How the pairs
// are found and what pass 3 reads is a strategy, chosen by Run:
//
//   - streaming (normally): pass 1 pairs each use with its object's
//     lifecycle rows as the rows arrive, merged back into time order, and
//     keeps a thinned log of what pass 3 needs; the trace is decoded once.
//   - exact, when the trace's order defeats streaming: pass 1 keeps the
//     init/dispose rows (spilled to object-hash partitions beyond
//     Options.MemoryBudget) and the log, pass 2 reads the trace again.
//   - exact over a row spill (Options.RowSpill): passes 2 and 3 read a
//     compact copy of the rows written in pass 1.
//
// All give the same plan; docs/algorithm.md gives the exact rules.
package analyze
