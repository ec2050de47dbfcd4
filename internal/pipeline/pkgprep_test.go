package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memorder/wafl/plans"
)

// pkgRunModule is a module whose tests exercise the package run's split:
// parallel top-level tests, parallel subtests, a goroutine that outlives
// its test, and (package pp/crash) a test that crashes the shared process
// with a MEMORDER panic between two passing tests. Every race function is
// its own copy, so that each test's candidates are at its own sites.
func pkgRunModule(t *testing.T) string {
	dir := t.TempDir()
	race := func(name string) string {
		return fmt.Sprintf(`
func %s() int {
	s := &S{}
	done := make(chan struct{})
	go func() {
		s.h = &H{n: 1}
		close(done)
	}()
	<-done
	return s.h.Get()
}
`, name)
	}
	files := map[string]string{
		"go.mod": "module example.com/pp\n\ngo 1.22\n",
		"pp.go": "package pp\n\nimport \"time\"\n\ntype H struct{ n int }\n\nfunc (h *H) Get() int { return h.n }\n\ntype S struct{ h *H }\n" +
			race("RaceA") + race("RaceB") + race("RaceC") + race("RaceD") + race("RaceE") + `
// Leak calls RaceE every millisecond until stop is closed.
func Leak(stop <-chan struct{}) {
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			RaceE()
			time.Sleep(time.Millisecond)
		}
	}()
}
`,
		"a_test.go": `package pp

import (
	"testing"
	"time"
)

func TestA(t *testing.T) {
	t.Parallel()
	for range 20 {
		RaceA()
	}
}

func TestB(t *testing.T) {
	t.Parallel()
	for range 20 {
		RaceB()
	}
}

func TestSub(t *testing.T) {
	t.Run("c", func(t *testing.T) {
		t.Parallel()
		for range 20 {
			RaceC()
		}
	})
	t.Run("d", func(t *testing.T) {
		t.Parallel()
		for range 20 {
			RaceD()
		}
	})
}

var stop = make(chan struct{})

func TestLeak(t *testing.T) {
	Leak(stop) // runs on after the test, until TestLast
	time.Sleep(5 * time.Millisecond)
}

func TestLast(t *testing.T) {
	time.Sleep(100 * time.Millisecond)
	close(stop)
}
`,
		"crash/crash.go": `package crash

type H struct{ n int }

func (h *H) Get() int { return h.n }

type S struct {
	h    *H
	done chan int
}

// Start uses s.h before it is set, always: a MEMORDER crash without delay.
func (s *S) Start() {
	s.done = make(chan int, 1)
	go s.loop()
	<-s.done
	s.h = &H{n: 41}
}

func (s *S) loop() { s.done <- s.h.Get() }

func Fine() int {
	s := &S{h: &H{n: 1}}
	return s.h.Get()
}
`,
		"crash/crash_test.go": `package crash

import "testing"

func TestOK1(t *testing.T) { Fine() }

func TestCrash(t *testing.T) { (&S{}).Start() }

func TestOK2(t *testing.T) { Fine() }
`,
	}
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// candidates reads every plan of a work directory: test → its candidate
// pairs.
func candidates(t *testing.T, work string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(filepath.Join(work, "plans"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".fails.json") {
			return err
		}
		p, err := plans.Load(path)
		if err != nil {
			return err
		}
		var cs []string
		for _, l := range p.Locations {
			for _, pr := range l.Pairs {
				cs = append(cs, fmt.Sprintf("%s %d→%d", pr.Kind, pr.First, pr.Second))
			}
		}
		sort.Strings(cs)
		out[p.Provenance.Test] = cs
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPackageRunSamePlans prepares the module both ways, each test alone
// (--per-test) and a package's tests in one process, and wants the same
// tests prepared, the same crash reported and the same candidates per
// test. The candidates depend on scheduling (near-miss windows), so the
// comparison has a retry budget.
func TestPackageRunSamePlans(t *testing.T) {
	if testing.Short() {
		t.Skip("builds instrumented test binaries")
	}
	dir := pkgRunModule(t)
	const attempts = 3
	for attempt := 1; ; attempt++ {
		var cands [2]map[string][]string
		var works [2]string
		for i, perTest := range []bool{true, false} {
			works[i] = t.TempDir()
			o := PrepareOptions{
				Common:  Common{Dir: dir, WorkDir: works[i]},
				Tests:   Tests{Parallel: 2},
				PerTest: perTest,
			}
			sum, err := Prepare(context.Background(), o)
			if err != nil {
				t.Fatalf("prepare (per test %v): %v", perTest, err)
			}
			if sum.Tests != 8 || sum.Prepared != 7 || sum.FailPlain != 0 {
				t.Fatalf("per test %v: %d tests, %d prepared, %d failing; want 8, 7, 0; problems %v",
					perTest, sum.Tests, sum.Prepared, sum.FailPlain, sum.Problems)
			}
			if len(sum.Bugs) != 1 || sum.Bugs[0].Test != "TestCrash" {
				t.Fatalf("per test %v: bugs %v, want the crash of TestCrash", perTest, sum.Bugs)
			}
			cands[i] = candidates(t, works[i])
		}
		// The package run kept TestOK1, which passed before the crash,
		// and ran TestCrash and TestOK2 (never reached) alone.
		logs := filepath.Join(works[1], "logs", "example.com", "pp", "crash")
		for test, alone := range map[string]bool{"TestOK1": false, "TestCrash": true, "TestOK2": true} {
			if _, err := os.Stat(filepath.Join(logs, test+".prepare.log")); (err == nil) != alone {
				t.Errorf("%s ran alone: %v, want %v", test, err == nil, alone)
			}
		}
		for _, test := range []string{"TestA", "TestB", "TestSub", "TestLeak", "TestLast"} {
			if _, err := os.Stat(filepath.Join(works[1], "logs", "example.com", "pp", test+".prepare.log")); err == nil {
				t.Errorf("%s ran alone, want it kept from the package run", test)
			}
		}
		var diffs []string
		for test, want := range cands[0] {
			if got := cands[1][test]; strings.Join(got, ", ") != strings.Join(want, ", ") {
				diffs = append(diffs, fmt.Sprintf("%s: per test %v, package run %v", test, want, got))
			}
		}
		if len(cands[0]) != 7 || len(cands[1]) != 7 {
			diffs = append(diffs, fmt.Sprintf("plans: per test %d, package run %d, want 7", len(cands[0]), len(cands[1])))
		}
		for _, test := range []string{"TestA", "TestB", "TestSub", "TestLeak"} {
			if len(cands[0][test]) == 0 {
				diffs = append(diffs, test+": no candidates in its per-test plan")
			}
		}
		if len(diffs) == 0 {
			return
		}
		if attempt == attempts {
			t.Fatalf("candidates differ after %d attempts:\n%s", attempts, strings.Join(diffs, "\n"))
		}
		t.Logf("attempt %d: %s", attempt, strings.Join(diffs, "; "))
	}
}

// TestInterruptKeepsFinishedTests interrupts prepare while the package
// run hangs in its third test: the two tests that finished before keep
// their plans, and the hanging one has none.
func TestInterruptKeepsFinishedTests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds instrumented test binaries")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/intr\n\ngo 1.22\n",
		"intr.go": `package intr

type H struct{ n int }

func (h *H) Get() int { return h.n }

type S struct{ h *H }

func Race() int {
	s := &S{}
	done := make(chan struct{})
	go func() {
		s.h = &H{n: 1}
		close(done)
	}()
	<-done
	return s.h.Get()
}
`,
		"intr_test.go": `package intr

import (
	"os"
	"path/filepath"
	"testing"
)

func TestA(t *testing.T) { Race() }
func TestB(t *testing.T) { Race() }
func TestHang(t *testing.T) {
	os.WriteFile(filepath.Join(os.Getenv("INTR_DIR"), "hanging"), nil, 0o644)
	select {}
}
`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flag := t.TempDir()
	t.Setenv("INTR_DIR", flag)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once the package run reached the hanging test.
		for {
			if _, err := os.Stat(filepath.Join(flag, "hanging")); err == nil {
				time.Sleep(200 * time.Millisecond)
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	work := t.TempDir()
	_, err := Prepare(ctx, PrepareOptions{Common: Common{Dir: dir, WorkDir: work}, Tests: Tests{Parallel: 1, Timeout: 5 * time.Minute}})
	if ctx.Err() == nil {
		t.Fatalf("prepare ended before the interrupt: %v", err)
	}
	got := candidates(t, work)
	for _, test := range []string{"TestA", "TestB"} {
		if _, ok := got[test]; !ok {
			t.Errorf("%s finished before the interrupt but has no plan (plans: %v)", test, got)
		}
	}
	if _, ok := got["TestHang"]; ok {
		t.Error("TestHang, interrupted, has a plan")
	}
}
