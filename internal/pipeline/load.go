package pipeline

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
)

// loadFactor estimates how much slower than on an idle machine a process
// runs right now: runnable tasks per core, from the instantaneous run
// queue (/proc/stat procs_running, less this process's own threads that
// are running it) and the one-minute load average, whichever is higher,
// never below 1. It is 1 where /proc is not available. The analysis
// scales δ and the maximum delay by it (plans.Overrides.LoadFactor).
func loadFactor() float64 {
	ncpu := float64(runtime.NumCPU())
	var q float64
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		for _, l := range bytes.Split(data, []byte("\n")) {
			if v, ok := bytes.CutPrefix(l, []byte("procs_running ")); ok {
				if n, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64); err == nil {
					q = n - 1 // this process reading /proc/stat
				}
			}
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := bytes.Fields(data); len(f) > 0 {
			if la, err := strconv.ParseFloat(string(f[0]), 64); err == nil {
				q = max(q, la)
			}
		}
	}
	return max(1, q/ncpu)
}
