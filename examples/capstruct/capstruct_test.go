package capstruct

import (
	"testing"
	"time"
)

// Tearing the sandbox down takes 8 ms; the result is stored microseconds
// after done is closed.
func TestExecute(t *testing.T) {
	if got := Execute("noop", 8*time.Millisecond); got != "NOOP" {
		t.Fatalf("Execute = %q, want NOOP", got)
	}
}
