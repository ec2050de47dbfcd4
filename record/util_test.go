package record

import "time"

func sleepMS(n int) { time.Sleep(time.Duration(n) * time.Millisecond) }

// stats returns the number of events written to the current (or last)
// spill file and the number lost to write errors.
func stats() (written, dropped int64) {
	if r := active.Load(); r != nil {
		return r.events.Load(), r.dropped.Load()
	}
	return 0, 0
}

// The recorder's own tests count rows: thinning is off unless a test
// turns it on (TestThinning).
func init() { thinning = false }
