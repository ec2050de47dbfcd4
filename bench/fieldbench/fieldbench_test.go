package fieldbench

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const manifestDir = "../scripts/field"

// TestManifests checks every manifest offline: it parses, names its fix, and
// its patch (if any) exists and changes test files only.
func TestManifests(t *testing.T) {
	ms, err := LoadManifests(manifestDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no manifests in bench/scripts/field")
	}
	for _, m := range ms {
		switch {
		case m.Unfixed():
			if !strings.HasPrefix(m.Issue, "https://") {
				t.Errorf("%s: fix is none but issue is not a link: %q", m.Name, m.Issue)
			}
		case !strings.HasPrefix(m.Fix, "https://"):
			t.Errorf("%s: fix is not a link: %q", m.Name, m.Fix)
		}
		if m.Patch == "" {
			continue
		}
		patch, err := os.ReadFile(filepath.Join(m.Dir, m.Patch))
		if err != nil {
			t.Errorf("%s: %v", m.Name, err)
			continue
		}
		if err := CheckTestOnly(patch); err != nil {
			t.Errorf("%s: %v", m.Name, err)
		}
	}
}

// TestRunPattern checks that a manifest selects its test exactly, and that a
// run key (a subtest) replaces the default pattern.
func TestRunPattern(t *testing.T) {
	dir := t.TempDir()
	write := func(name, extra string) *Manifest {
		t.Helper()
		body := "project: p/q\nmodule: example.com/q\nversion: v1.0.0\npackage: .\n" +
			"test: TestX\npanic: send on closed channel\nfix: https://example.com/fix\n" + extra
		path := filepath.Join(dir, name+".field")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ParseManifest(path)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if got := write("plain", "").RunPattern(); got != "^TestX$" {
		t.Errorf("default pattern = %q, want ^TestX$", got)
	}
	if got := write("sub", "run: ^Test$/^X$\n").RunPattern(); got != "^Test$/^X$" {
		t.Errorf("run key pattern = %q, want ^Test$/^X$", got)
	}
}

func TestCheckTestOnly(t *testing.T) {
	ok := []byte("--- a/x_test.go\n+++ b/x_test.go\n@@ -1 +1 @@\n")
	if err := CheckTestOnly(ok); err != nil {
		t.Errorf("test-file patch rejected: %v", err)
	}
	bad := []byte("--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n")
	if err := CheckTestOnly(bad); err == nil {
		t.Error("patch of x.go accepted")
	}
}

// e2eBug is the manifest the end-to-end test runs: a small module (one
// dependency besides the standard library), a test that takes milliseconds,
// and an exposure measured at 10/10 tries in the first detection run (see
// docs/evaluation.md, field section).
const e2eBug = "eslgoeof"

// e2eRuns is the retry budget of detection runs. With the measured rate a
// miss in 4 runs is not bad luck but a regression.
const e2eRuns = 6

var candidates = regexp.MustCompile(`(\d+) events?, (\d+) candidate pairs? at (\d+) locations?`)

// TestFieldEndToEnd runs one field bug through wafl as a user would: the
// module version fetched through the Go module proxy (skipped when it is not
// reachable), the test patch applied, wafl prepare, then wafl detect until it
// reports the bug's panic. It needs the network only for the download.
func TestFieldEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads a module and runs wafl on it")
	}
	ms, err := LoadManifests(manifestDir, e2eBug)
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	// The download and wafl's runs get 5 minutes in all: about 10 s on a
	// loaded 2-core machine with warm caches, but CI runs this next to the
	// other packages' tests with cold caches; a generous window costs
	// nothing when the test passes. Building wafl is not counted.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := t.TempDir()

	// Deterministic part 1: the module version and the patch.
	src, err := PrepareSource(ctx, m, work)
	if errors.Is(err, ErrNoProxy) {
		t.Skipf("module proxy not reachable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if m.Patch != "" && !src.Patched {
		t.Fatal("patch not applied")
	}
	// Dependencies of the module: also from the proxy (skip if unreachable).
	if r := (Cmd{Dir: src.Root, Env: GoEnv(), Timeout: 3 * time.Minute}).Run(ctx, "go", "mod", "download"); r.Code != 0 {
		t.Skipf("cannot download the dependencies of %s (no module proxy?): %s", m.ModVersion(), lastLines(r.Out, 3))
	}

	// wafl from this repository.
	wafl := filepath.Join(work, "wafl")
	if r := (Cmd{Dir: "../..", Env: GoEnv(), Timeout: 5 * time.Minute}).Run(context.Background(), "go", "build", "-o", wafl, "./cmd/wafl"); r.Code != 0 {
		t.Fatalf("building wafl: %s", r.Out)
	}

	// Deterministic part 2: instrumented build and a preparation run that
	// finds the candidate pair.
	dir := filepath.Join(work, "dot-wafl")
	common := []string{"--run", m.RunPattern(), "--dir", dir, "--timeout", "30s"}
	wc := Cmd{Dir: src.Root, Env: GoEnv(), Timeout: 2 * time.Minute}
	p := wc.Run(ctx, wafl, append(append([]string{"prepare"}, common...), m.Package)...)
	if p.Code != 0 {
		t.Fatalf("wafl prepare: exit %d\n%s", p.Code, p.Out)
	}
	c := candidates.FindSubmatch(p.Out)
	if c == nil {
		t.Fatalf("wafl prepare reported no candidates:\n%s", p.Out)
	}
	if n, _ := strconv.Atoi(string(c[2])); n == 0 {
		t.Fatalf("wafl prepare found no candidate pair:\n%s", p.Out)
	}
	t.Logf("prepare: %s", c[0])

	// Exposure within the retry budget.
	for run := 1; run <= e2eRuns; run++ {
		d := wc.RunSplit(ctx, wafl, append(append([]string{"detect", "--runs", "1", "--json"}, common...), m.Package)...)
		switch d.Code {
		case 0:
			t.Logf("run %d: nothing reported\n%s", run, d.Err)
			continue
		case 1:
			var rep waflReport
			if err := json.Unmarshal(d.Out, &rep); err != nil {
				t.Fatalf("run %d: exit 1 without a JSON report: %v\n%s", run, err, d.Out)
			}
			for _, b := range rep.Bugs {
				if m.PanicIn(b.Panic) {
					t.Logf("run %d: %s: %s", run, b.Kind, b.Panic)
					return
				}
			}
			t.Fatalf("run %d: reported something else than %q:\n%s", run, m.Panic, d.Out)
		default:
			t.Fatalf("run %d: wafl detect exit %d%s\n%s", run, d.Code, timedOut(d), d.Err)
		}
	}
	t.Fatalf("%s not exposed in %d detection runs (measured: first run, every try)", m.Name, e2eRuns)
}

// TestPanicIn checks that a panic key with alternatives matches any of them.
func TestPanicIn(t *testing.T) {
	m := &Manifest{Panic: "close of closed channel | send on closed channel"}
	for text, want := range map[string]bool{
		"panic: close of closed channel":            true,
		"panic: send on closed channel [recovered]": true,
		"panic: assignment to entry in nil map":     false,
	} {
		if got := m.PanicIn(text); got != want {
			t.Errorf("PanicIn(%q) = %v, want %v", text, got, want)
		}
	}
	if one := (&Manifest{Panic: "nil pointer dereference"}); !one.PanicIn("panic: runtime error: invalid memory address or nil pointer dereference") {
		t.Error("a single panic no longer matches")
	}
}
