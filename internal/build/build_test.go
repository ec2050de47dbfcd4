package build

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorder/wafl/instrument/sites"
)

// TestBuildReportsErrors: a package that does not type-check is reported
// with the compiler's message and skipped, a package without tests is
// marked, and the others are built.
func TestBuildReportsErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "go.mod"), "module example.com/errs\n\ngo 1.21\n")
	writeFile(t, filepath.Join(tmp, "good", "good.go"), "package good\n\ntype T struct{ p *T }\n\nfunc (t *T) Get() *T { return t.p.p }\n")
	writeFile(t, filepath.Join(tmp, "good", "good_test.go"), "package good\n\nimport \"testing\"\n\nfunc TestGet(t *testing.T) { x := &T{}; x.p = x; _ = x.Get() }\n")
	writeFile(t, filepath.Join(tmp, "bad", "bad.go"), "package bad\n\nvar X int = \"s\"\n")
	writeFile(t, filepath.Join(tmp, "bad", "bad_test.go"), "package bad\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n")
	writeFile(t, filepath.Join(tmp, "notests", "n.go"), "package notests\n")
	var log strings.Builder
	res, err := Build(context.Background(), Config{Dir: tmp, Patterns: []string{"./..."}, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Package{}
	for _, p := range res.Packages {
		got[strings.TrimPrefix(p.ImportPath, "example.com/errs/")] = p
	}
	if p := got["bad"]; p == nil || p.Err == nil || !strings.Contains(p.Err.Error(), "bad.go:3") || p.Binary != "" {
		t.Errorf("bad: %+v", p)
	}
	if p := got["notests"]; p == nil || p.Err != ErrNoTestFiles {
		t.Errorf("notests: %+v", p)
	}
	p := got["good"]
	if p == nil || p.Err != nil || p.NumSites == 0 || len(p.Tests) != 1 {
		t.Fatalf("good: %+v\nlog:\n%s", p, log.String())
	}
	if out, err := exec.Command(p.Binary, "-test.count=1").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", p.Binary, err, out)
	}
	// The user's go.mod is untouched and the work directory holds the rest.
	if data, _ := os.ReadFile(filepath.Join(tmp, "go.mod")); string(data) != "module example.com/errs\n\ngo 1.21\n" {
		t.Errorf("user go.mod changed:\n%s", data)
	}
	if _, err := sites.Load(p.Sites); err != nil {
		t.Error(err)
	}
}

// TestBuildOddButValidPackages: code that go test builds must build
// instrumented too — constant expressions through pointers, user files
// named like wafl's generated ones, external test files named like
// internal ones.
func TestBuildOddButValidPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "go.mod"), "module example.com/odd\n\ngo 1.21\n")
	writeFile(t, filepath.Join(tmp, "p", "wafl_helpers.go"), "package p\n\nvar G *[4]int\n\nconst N = len(*G)\n\ntype T struct{ a *[3]int }\n\nfunc (t *T) Cap() int { return cap(*t.a) + len(t.a) }\n")
	writeFile(t, filepath.Join(tmp, "p", "helpers.go"), "package p\n\nfunc Helper() int { return N }\n")
	writeFile(t, filepath.Join(tmp, "p", "a_test.go"), "package p\n\nimport \"testing\"\n\nfunc TestN(t *testing.T) {\n\tif N != 4 || Helper() != 4 || (&T{}).Cap() != 6 {\n\t\tt.Fatal(N)\n\t}\n}\n")
	writeFile(t, filepath.Join(tmp, "p", "xtest_a_test.go"), "package p\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n")
	writeFile(t, filepath.Join(tmp, "p", "x_test.go"), "package p_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/odd/p\"\n)\n\nfunc TestExt(t *testing.T) {\n\tif p.N != 4 {\n\t\tt.Fatal(p.N)\n\t}\n}\n")
	var log strings.Builder
	res, err := Build(context.Background(), Config{Dir: tmp, Patterns: []string{"./..."}, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Packages) != 1 || res.Packages[0].Err != nil {
		t.Fatalf("packages: %+v\nlog:\n%s", res.Packages, log.String())
	}
	if out, err := exec.Command(res.Packages[0].Binary, "-test.count=1", "-test.v").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
