// Package lcc is wafl's logical call context: goroutine identity and fork
// vector clocks (WAFL thesis §4.1).
//
// Go has no goroutine-local storage, so lcc keys per-goroutine state by the
// goroutine id and the instrumenter threads the parent's context through
// every instrumented go statement: the parent calls Fork, the child calls
// Adopt with the returned Token before running the original function.
// Goroutines started by uninstrumented code have no known parent and are
// concurrent with everything.
package lcc
