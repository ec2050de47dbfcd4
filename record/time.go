package record

import _ "unsafe" // for go:linkname

// nanotime is the runtime's monotonic clock in nanoseconds, the clock the
// Go execution tracer uses. runtime.nanotime is on the linkname allow list.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Now returns the recorder's monotonic time in nanoseconds: the time
// column of the trace. It is comparable only within one process.
func Now() int64 { return nanotime() }
