package record

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestHooksInline checks that the compiler inlines every hook's fast path,
// so that a disabled hook costs a load and a branch at the call site.
func TestHooksInline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the compiler")
	}
	out, err := exec.Command(runtime.GOROOT()+"/bin/go", "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, fn := range []string{"Init", "Dispose", "Store", "Use", "Fork", "Adopt"} {
		if !strings.Contains(string(out), "can inline "+fn+"\n") && !strings.Contains(string(out), "can inline "+fn+" with") {
			t.Errorf("hook %s is not inlinable; compiler said:\n%s", fn, out)
		}
	}
}
