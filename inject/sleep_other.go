//go:build !linux

package inject

import "time"

// realSleep blocks the calling goroutine for ns nanoseconds. Outside Linux
// it is time.Sleep, which inside a testing/synctest bubble is fake time
// (see sleep_linux.go).
func realSleep(ns int64) { time.Sleep(time.Duration(ns)) }
