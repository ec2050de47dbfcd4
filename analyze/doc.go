// Package analyze turns a preparation-run trace into a plan: it builds the
// candidate set S with the near-miss window and fork vector clocks, learns
// per-location delay lengths and interference sets (WAFL thesis §3.1,
// §4.1–4.4), streaming over traces larger than memory.
//
// File analyzes an Arrow trace written by record/trace; Reader analyzes a
// stream; Run analyzes any Source of column batches. All return a
// validated *plans.Plan and Stats (events, objects, candidates, pair
// instances dropped by the near-miss window, by goroutine and by forks,
// warnings). The analysis normally decodes the trace once: pass 1 pairs
// each use with its object's lifecycle rows as the rows arrive (merged
// back into time order) and keeps a thinned log of what the interference
// pass needs. When the trace's order defeats that, it falls back to the
// exact passes — forks and lifecycle rows, pairs, interference — keeping
// init/dispose rows (spilled to object-hash partitions beyond
// Options.MemoryBudget) and per-pair aggregates in memory. Both give the
// same plan; docs/algorithm.md gives the exact rules.
package analyze
