package workdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModuleRootOutsideModule(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GOFLAGS", "")
	t.Setenv("GO111MODULE", "")
	_, err := ModuleRoot(dir)
	if err == nil || !strings.Contains(err.Error(), "not inside a Go module") {
		t.Errorf("ModuleRoot(%s) = %v", dir, err)
	}
}

func TestLockHeld(t *testing.T) {
	w := &Dir{Work: t.TempDir()}
	unlock, err := w.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Lock(); err == nil || !strings.Contains(err.Error(), "in use by another wafl") {
		t.Errorf("second Lock = %v, want an error naming the holder", err)
	}
	unlock()
	unlock2, err := w.Lock()
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock2()
}

func TestFailureRecords(t *testing.T) {
	w := &Dir{Work: t.TempDir()}
	if _, ok := w.RememberedFailure("example.com/p", "TestX", "h1"); ok {
		t.Fatal("a failure remembered before any was recorded")
	}
	w.RememberFailure("example.com/p", "TestX", Failure{BinaryHash: "h1", Note: "timeout", Reason: "r", Output: "o"})
	if f, ok := w.RememberedFailure("example.com/p", "TestX", "h1"); !ok || f.Note != "timeout" {
		t.Fatalf("RememberedFailure = %+v, %v", f, ok)
	}
	if _, ok := w.RememberedFailure("example.com/p", "TestX", "h2"); ok {
		t.Error("a failure on another build is remembered")
	}
	if _, err := os.Stat(filepath.Join(w.Work, "plans", "example.com", "p", "TestX.fails.json")); err != nil {
		t.Error(err)
	}
	w.ForgetFailure("example.com/p", "TestX")
	if _, ok := w.RememberedFailure("example.com/p", "TestX", "h1"); ok {
		t.Error("ForgetFailure left the record")
	}
}
