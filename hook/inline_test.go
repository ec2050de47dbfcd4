package hook

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestHooksInline checks that the compiler inlines every hook's fast path,
// so that a disabled hook costs a load and a branch at the call site, and
// that no hook makes its slot escape, nor the functions the hooks hand it
// to (record.Add, inject.At).
func TestHooksInline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the compiler")
	}
	out, err := exec.Command(runtime.GOROOT()+"/bin/go", "build", "-gcflags=-m", ".", "../record", "../inject").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	// A slot passed to a hook must not escape: instrumenting &local must not
	// move a user's local variable to the heap.
	for _, param := range []string{"slot", "obj"} {
		if strings.Contains(string(out), "leaking param: "+param) {
			t.Errorf("a hook leaks its %s parameter; compiler said:\n%s", param, out)
		}
	}
	for _, fn := range []string{"Init", "Dispose", "Store", "Use", "Deref", "Check", "Close", "Send", "Fork", "Go", "Adopt", "CurrentMode"} {
		if !strings.Contains(string(out), "can inline "+fn+"\n") && !strings.Contains(string(out), "can inline "+fn+" with") {
			t.Errorf("hook %s is not inlinable; compiler said:\n%s", fn, out)
		}
	}
}
