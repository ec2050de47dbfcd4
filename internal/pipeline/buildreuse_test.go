package pipeline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBuildReusedWhenNothingChanged: a second build of an unchanged module
// reuses the first one's binaries; an edited source file, a changed test
// binary, a failed package and WAFL_REBUILD=1 each make it build again.
func TestBuildReusedWhenNothingChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries")
	}
	dir := t.TempDir()
	// Files get modification times in the past, each its own: a file
	// modified within the build cache's racy window (internal/build) makes the build not saved.
	past := time.Now().Add(-time.Hour)
	write := func(name, data string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		past = past.Add(time.Second)
		if err := os.Chtimes(path, past, past); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/bc\n\ngo 1.22\n")
	write("a/a.go", "package a\n\ntype S struct{ p *int }\n\nfunc (s *S) Get() int { return *s.p }\n")
	write("a/a_test.go", "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) { s := &S{p: new(int)}; _ = s.Get() }\n")
	write("b/b_test.go", "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {}\n")
	work := filepath.Join(t.TempDir(), "w")
	instrument := func(want string) *Summary {
		t.Helper()
		var stderr, stdout bytes.Buffer
		sum, err := Instrument(context.Background(), InstrumentOptions{
			Common:   Common{Dir: dir, WorkDir: work, Verbose: true, Stdout: &stdout, Stderr: &stderr},
			Packages: Packages{Patterns: []string{"./..."}},
		})
		if err != nil {
			t.Fatal(err)
		}
		reused := strings.Contains(stderr.String(), "nothing changed since the last build")
		if reused != (want == "reuse") {
			t.Fatalf("want %s; reused %v; log:\n%s", want, reused, stderr.String())
		}
		if sum.PackagesBuilt != 2 && !strings.Contains(want, "fail") {
			t.Fatalf("%d packages built, want 2; log:\n%s", sum.PackagesBuilt, stderr.String())
		}
		if !strings.Contains(stdout.String(), filepath.Join("example.com", "bc", "a.test")) {
			t.Fatalf("no binary of example.com/bc/a in the output:\n%s", stdout.String())
		}
		return sum
	}
	instrument("build")
	instrument("reuse")
	// An edited file (its size and time change).
	write("a/a.go", "package a\n\ntype S struct{ p *int }\n\nfunc (s *S) Get() int { return *s.p + 0 }\n")
	instrument("build")
	instrument("reuse")
	// Only the modification time of a file changes.
	past = past.Add(time.Second)
	if err := os.Chtimes(filepath.Join(dir, "b", "b_test.go"), past, past); err != nil {
		t.Fatal(err)
	}
	instrument("build")
	instrument("reuse")
	// A file modified just now: built, and not saved for reuse, until
	// its time is not recent any more.
	now := time.Now()
	if err := os.Chtimes(filepath.Join(dir, "b", "b_test.go"), now, now); err != nil {
		t.Fatal(err)
	}
	instrument("build")
	instrument("build")
	past = past.Add(time.Second)
	if err := os.Chtimes(filepath.Join(dir, "b", "b_test.go"), past, past); err != nil {
		t.Fatal(err)
	}
	instrument("build")
	// A binary replaced behind wafl's back.
	bin := filepath.Join(work, "bin", "example.com", "bc", "b.test")
	if err := os.WriteFile(bin, []byte("not a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	instrument("build")
	instrument("reuse")
	// A package that fails to build: never reused, the failure shows
	// again.
	write("b/b_test.go", "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) { undefined() }\n")
	for range 2 {
		if sum := instrument("build, fail"); sum.PackagesBuilt != 1 || len(sum.Problems) != 1 {
			t.Fatalf("built %d, problems %v; want 1 built and b's build failure", sum.PackagesBuilt, sum.Problems)
		}
	}
	write("b/b_test.go", "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {}\n")
	instrument("build")
	t.Setenv("WAFL_REBUILD", "1")
	instrument("build")
}
