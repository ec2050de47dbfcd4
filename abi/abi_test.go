package abi

import (
	"os/exec"
	"strings"
	"testing"
)

func TestSpecsIndexedByOp(t *testing.T) {
	seen := map[string]bool{}
	for i, s := range Specs {
		if s.Op != Op(i) {
			t.Errorf("Specs[%d].Op = %d", i, s.Op)
		}
		if s.Name == "" || seen[s.Name] {
			t.Errorf("Specs[%d].Name = %q: empty or repeated", i, s.Name)
		}
		seen[s.Name] = true
		if Op(i).String() != s.Name {
			t.Errorf("Op(%d).String() = %q, want %q", i, Op(i).String(), s.Name)
		}
	}
	for _, o := range []Op{OpInit, OpUse, OpDispose} {
		if !o.Access() {
			t.Errorf("%v is an access", o)
		}
	}
	if OpFork.Access() {
		t.Error("fork is not an access")
	}
}

// TestLeaf keeps abi a leaf: the standard library only.
func TestLeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/memorder/wafl/abi" {
			t.Errorf("abi imports %s; it must use only the standard library", p)
		}
	}
}
