package abi

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestStampOf(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, ok := StampOf(os.Args[0]); ok {
			t.Fatal("a stamp outside Linux")
		}
		t.Skip("stamps are read on Linux only")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "bin")
	if err := os.WriteFile(path, []byte("one"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, ok := StampOf(path)
	if !ok || a.Size != 3 || a.Ino == 0 || a.CtimeNs == 0 {
		t.Fatalf("StampOf = %+v, %v", a, ok)
	}
	if b, _ := StampOf(path); b != a {
		t.Errorf("two stamps of an unchanged file differ: %+v, %+v", a, b)
	}
	// Content put back in place with its old mtime still shows: the
	// status-change time moved (cp -p, tar do this).
	time.Sleep(50 * time.Millisecond) // past a tick of the file times' clock
	old := time.Unix(0, a.MtimeNs)
	if err := os.Chtimes(path, old.Add(-time.Hour), old.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if c, _ := StampOf(path); c.MtimeNs != a.MtimeNs || c == a {
		t.Fatalf("mtime put back: stamp %+v, was %+v (same mtime, another ctime wanted)", c, a)
	}
	// Replaced by another file of the same size: another inode.
	repl := filepath.Join(dir, "new")
	if err := os.WriteFile(repl, []byte("two"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repl, path); err != nil {
		t.Fatal(err)
	}
	if d, _ := StampOf(path); d == a {
		t.Errorf("a replaced file kept its stamp %+v", a)
	}
	if _, ok := StampOf(filepath.Join(dir, "missing")); ok {
		t.Error("a missing file has a stamp")
	}
}

func TestStampSettled(t *testing.T) {
	s := Stamp{MtimeNs: 5e9, CtimeNs: 6e9}
	for _, c := range []struct {
		now  int64
		want bool
	}{{6e9, false}, {6.5e9, false}, {7e9, true}, {9e9, true}} {
		if got := s.Settled(c.now); got != c.want {
			t.Errorf("Settled(%d) = %v, want %v", c.now, got, c.want)
		}
	}
	future := Stamp{MtimeNs: 20e9, CtimeNs: 6e9} // mtime set ahead (touch -d)
	if future.Settled(9e9) {
		t.Error("a stamp with an mtime ahead of now settled")
	}
}
