package record

import _ "unsafe" // for go:linkname

// nanotime is the runtime's monotonic clock in nanoseconds, the clock the
// Go execution tracer uses: the time column of the trace, comparable only
// within one process. runtime.nanotime is on the linkname allow list.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
