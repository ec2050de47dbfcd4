package pipeline

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pastWriter returns a function that writes a file into dir with a
// modification time an hour ago, each later than the last: a file
// modified within the build cache's racy window (internal/build) makes the
// build not saved.
func pastWriter(t *testing.T, dir string) func(name, data string) {
	past := time.Now().Add(-time.Hour)
	return func(name, data string) {
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
}

// TestBuildReusedWhenNothingChanged: a second build of an unchanged module
// reuses the first one's binaries; an edited source file, a changed test
// binary, a failed package and WAFL_REBUILD=1 each make it build again.
func TestBuildReusedWhenNothingChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries")
	}
	t.Setenv("WAFL_BUILD_STORE", t.TempDir())
	dir := t.TempDir()
	write := pastWriter(t, dir)
	past := time.Now().Add(-30 * time.Minute) // for changing only a modification time, later than every write
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

// TestBuildStoreAcrossWorkDirs: a build in a fresh work directory takes
// an unchanged module's build from the build store; a file a test writes
// into its package directory changes nothing, an edited embedded file
// does.
func TestBuildStoreAcrossWorkDirs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries")
	}
	store := t.TempDir()
	t.Setenv("WAFL_BUILD_STORE", store)
	dir := t.TempDir()
	write := pastWriter(t, dir)
	write("go.mod", "module example.com/st\n\ngo 1.22\n")
	write("a/a.go", "package a\n\ntype S struct{ p *int }\n\nfunc (s *S) Get() int { return *s.p }\n")
	write("a/a_test.go", "package a\n\nimport (\n\t_ \"embed\"\n\t\"testing\"\n)\n\n//go:embed testdata/want.txt\nvar want string\n\nfunc TestA(t *testing.T) { s := &S{p: new(int)}; _ = s.Get(); _ = want }\n")
	write("a/testdata/want.txt", "one\n")
	write("b/b_test.go", "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {}\n")
	n := 0
	instrument := func(want string) string {
		t.Helper()
		n++
		work := filepath.Join(t.TempDir(), "w")
		var stderr, stdout bytes.Buffer
		sum, err := Instrument(context.Background(), InstrumentOptions{
			Common:   Common{Dir: dir, WorkDir: work, Verbose: true, Stdout: &stdout, Stderr: &stderr},
			Packages: Packages{Patterns: []string{"./..."}},
		})
		if err != nil {
			t.Fatal(err)
		}
		stored := strings.Contains(stderr.String(), "the same build is in the build store")
		if stored != (want == "store") || sum.PackagesBuilt != 2 {
			t.Fatalf("build %d: want %s; from the store %v, %d packages built; log:\n%s", n, want, stored, sum.PackagesBuilt, stderr.String())
		}
		bin := filepath.Join(work, "bin", "example.com", "st", "a.test")
		for _, f := range []string{bin, filepath.Join(work, "bin", "example.com", "st", "a.sites.json")} {
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("build %d: %v", n, err)
			}
		}
		return bin
	}
	instrument("build")
	bin := instrument("store")
	// The binary from the store runs.
	if out, err := exec.Command(bin, "-test.list", ".").CombinedOutput(); err != nil || !strings.Contains(string(out), "TestA") {
		t.Fatalf("%s -test.list: %v\n%s", bin, err, out)
	}
	// Files a test run leaves in the module are not build inputs.
	write("a/out.log", "written by a test\n")
	write("b/socket", "")
	instrument("store")
	// An embedded file is one.
	write("a/testdata/want.txt", "two\n")
	instrument("build")
	instrument("store")
	// A stored binary changed behind wafl's back is not used.
	ents, err := os.ReadDir(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		for _, name := range []string{"p0.test", "p1.test"} {
			os.WriteFile(filepath.Join(store, e.Name(), name), []byte("not a binary"), 0o755)
		}
	}
	instrument("build")
	t.Setenv("WAFL_BUILD_STORE", "off")
	instrument("build")
}
