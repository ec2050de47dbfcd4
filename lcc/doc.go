// Package lcc is wafl's logical call context: goroutine identity and fork
// vector clocks (WAFL thesis §4.1).
//
// Go has no goroutine-local storage, so lcc keys per-goroutine state by the
// goroutine id and the instrumenter threads the parent's context through
// every instrumented go statement: the parent calls Fork, the child calls
// Adopt with the returned Token before running the original function.
// Goroutines started by uninstrumented code have no known parent and are
// concurrent with everything.
//
// # Run time: no vector clocks
//
// The test binary never builds a vector clock. Each goroutine has one own
// counter that starts at 1; Fork returns Token{Parent: goid, Clock: counter}
// and then advances the parent's counter, and Current returns (goid,
// counter) for every event. The only extra fact needed to rebuild the
// vector clocks is the fork edge (parent, parent's counter at the fork,
// child), which the recorder writes as one trace row when the child adopts
// the token. Since Go programs only fork (joins are channel operations and
// are not clock edges here), the fork edges form a forest and the vector
// clock of any event is determined by its goroutine's ancestor chain:
// Forest rebuilds it offline, from all edges or edge by edge as an
// analysis reads them, and answers HappensBefore and Concurrent by walking
// that chain (answers cached) without materializing any vector.
//
// The counters live in a lazily allocated two-level table indexed directly
// by goroutine id (ids are never reused): a lookup is two loads, a counter
// is written only by its own goroutine, and chunks are published with an
// atomic compare-and-swap, so the hot path takes no lock and never
// allocates. Goroutine ids come from github.com/petermattis/goid, which reads
// the id from the runtime's g struct (one load); TestGoidMatchesStack checks
// it against runtime.Stack on the running Go version.
package lcc
