// Package capstruct reproduces the pattern of bacalhau PR #2849 ("Fix race
// condition in noop executor"): the executor closed the done channel and
// then set the result; the goroutine waiting on done read the result and
// occasionally found it nil.
//
// Here the execution state is a local struct value captured by the
// goroutine that runs the job: it closes ex.done, then stores ex.result.
// The waiter tears the sandbox down after done and then reads ex.result.
// Normally the result is long stored by then; if the job goroutine is slow
// between the two statements, the waiter dereferences a nil result. ex is
// never assigned as a whole, only its fields are, so its fields are slots
// only when fields of captured local structs count.
//
// Kind: use-before-init (init of ex.result in the job goroutine, use in
// Execute).
package capstruct

import (
	"strings"
	"time"
)

// Result is the outcome of a job.
type Result struct {
	Output string
}

type execution struct {
	done   chan struct{}
	result *Result
}

// Execute runs job and returns its output; teardown is how long tearing
// down the sandbox takes.
func Execute(job string, teardown time.Duration) string {
	ex := execution{done: make(chan struct{})}
	go func() {
		out := strings.ToUpper(job)
		close(ex.done)
		ex.result = &Result{Output: out} // BUG: stored after done is closed
	}()
	<-ex.done
	time.Sleep(teardown)
	return ex.result.Output
}
