package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is wafl's GOGC. wafl is a short-lived command whose live heap
// is small next to the machine's memory (a plan, a trace's streaming
// state), and it allocates at a high rate while it converts and analyzes
// traces and reads and writes plans: at Go's default of 100 the collector
// took about a sixth of wafl's own CPU in a prepare of many short tests.
const gcPercent = 400

// tuneGC sets wafl's own garbage collection, never the test processes'
// (they inherit only the environment): GOGC gcPercent, with a soft memory
// limit of a quarter of the machine's memory so that the larger
// headroom never grows the heap of a large trace's analysis beyond it.
// A GOGC or GOMEMLIMIT in the environment is the user's and wins.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := physicalMemory(); total > 0 {
			debug.SetMemoryLimit(int64(total / 4))
		}
	}
}
