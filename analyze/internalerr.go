package analyze

import (
	"fmt"
	"runtime/debug"
)

// InternalError is a panic inside the analysis: a bug of wafl's, not a
// property of the trace. Run returns it as the error of that one analysis,
// so that the caller can report it for the test and go on with the others.
type InternalError struct {
	Value any    // what the analysis panicked with
	Stack []byte // the panicking goroutine's stack
}

func (e *InternalError) Error() string {
	return fmt.Sprintf("wafl bug: the analysis panicked: %v (please report it, with the trace)", e.Value)
}

// internalError wraps a recovered panic value, keeping the stack of the
// goroutine that first panicked when the value is already one.
func internalError(r any) *InternalError {
	if ie, ok := r.(*InternalError); ok {
		return ie
	}
	return &InternalError{Value: r, Stack: debug.Stack()}
}

// catch records a panic of the goroutine it is deferred in into *dst, for
// the goroutine that waits for it to raise again (rethrow).
func catch(dst **InternalError) {
	if r := recover(); r != nil {
		*dst = internalError(r)
	}
}

// rethrow panics with the first recorded panic of the workers, in the
// goroutine that waited for them, where Run recovers it.
func rethrow(ps []*InternalError) {
	for _, p := range ps {
		if p != nil {
			panic(p)
		}
	}
}
