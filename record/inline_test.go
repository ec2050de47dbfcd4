package record

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestHooksInline checks that the compiler inlines every hook's fast path,
// so that a disabled hook costs a load and a branch at the call site, and
// that no hook makes its slot escape.
func TestHooksInline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the compiler")
	}
	out, err := exec.Command(runtime.GOROOT()+"/bin/go", "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	// A slot passed to a hook must not escape: instrumenting &local must not
	// move a user's local variable to the heap.
	if strings.Contains(string(out), "leaking param: slot") {
		t.Errorf("a hook leaks its slot parameter; compiler said:\n%s", out)
	}
	for _, fn := range []string{"Init", "Dispose", "Store", "Use", "Fork", "Adopt"} {
		if !strings.Contains(string(out), "can inline "+fn+"\n") && !strings.Contains(string(out), "can inline "+fn+" with") {
			t.Errorf("hook %s is not inlinable; compiler said:\n%s", fn, out)
		}
	}
}
