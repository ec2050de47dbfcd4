// Command wafl finds MEMORDER concurrency bugs in Go programs — a value used
// by one goroutine before another initialized it, or after another disposed
// of it — by running a module's existing tests with injected delays.
//
//	wafl prepare ./...   # instrument, run each test once delay-free, plan delays
//	wafl detect ./...    # run tests with planned delays, report real panics
//
// See docs/usage.md.
package main

import "os"

func main() {
	tuneGC()
	os.Exit(Main())
}
