package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGC: without GOGC and GOMEMLIMIT in the environment wafl
// collects at gcPercent with a memory limit below the machine's memory;
// with them, it leaves both as the user set them.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	tuneGC()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: GC percent %d; want %d", got, gcPercent)
	}
	limit := debug.SetMemoryLimit(-1)
	if total := physicalMemory(); total > 0 && (limit <= 0 || uint64(limit) > total/4) {
		t.Errorf("GOMEMLIMIT unset: memory limit %d; want at most a quarter of %d", limit, total)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "1GiB")
	tuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=50 in the environment: wafl set GC percent %d; want it left alone", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT in the environment: wafl set the memory limit to %d; want it left alone", got)
	}
}
