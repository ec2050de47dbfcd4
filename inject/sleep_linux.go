package inject

import (
	"syscall"
	"time"
)

// realSleep blocks the calling goroutine for ns nanoseconds of real time.
// It sleeps in the nanosleep system call rather than time.Sleep: inside a
// testing/synctest bubble time.Sleep is fake, durable time — the bubble
// would see the delayed goroutine as durably blocked, synctest.Wait would
// return during the delay and the fake clock would jump over it. A
// goroutine in a system call is never durably blocked, so a bubble waits
// for the delay like any other running goroutine, and outside a bubble it
// is an ordinary sleep (the runtime hands the thread's P to others).
func realSleep(ns int64) {
	ts := syscall.NsecToTimespec(ns)
	for {
		var left syscall.Timespec
		err := syscall.Nanosleep(&ts, &left)
		if err != syscall.EINTR {
			if err != nil {
				time.Sleep(time.Duration(ns)) // not expected; keep the delay
			}
			return
		}
		ts = left
	}
}
