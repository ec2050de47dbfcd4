package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorder/wafl/plans"
)

// subtestSrc: TestTable reaches the pair of pairSrc in one of its six
// subtests; TestSeq's subtest "use" reaches it only after "setup" ran;
// TestDep's subtest "use" reaches it always, and fails when "setup" did
// not run before it.
const subtestSrc = `package subs

import (
	"strconv"
	"testing"
	"time"
)
` + pairSrc + `
func TestTable(t *testing.T) {
	for i := range 6 {
		t.Run("case "+strconv.Itoa(i), func(t *testing.T) {
			if i == 4 {
				pair()
				return
			}
			time.Sleep(10 * time.Millisecond)
		})
	}
}

func TestSeq(t *testing.T) {
	ran := false
	t.Run("setup", func(t *testing.T) { ran = true })
	t.Run("use", func(*testing.T) {
		if ran {
			pair()
		}
	})
}

func TestDep(t *testing.T) {
	ready := false
	t.Run("setup", func(t *testing.T) { ready = true })
	t.Run("use", func(t *testing.T) {
		pair()
		if !ready {
			t.Fatal("use ran without setup")
		}
	})
}
`

// TestDetectRunsSomeSubtests: prepare records which subtests reach the
// plan's sites; a detection run takes only those the pairs need, and
// once such a run reaches no delay location, the runs after it take the
// whole test.
func TestDetectRunsSomeSubtests(t *testing.T) {
	o, _ := preparedModule(t, "subs", subtestSrc, 3)
	load := func(name string) *plans.Plan {
		t.Helper()
		p, err := plans.Load(filepath.Join(o.WorkDir, "plans", "example.com", "subs", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	table := load("TestTable")
	if st := table.Subtests; st == nil || st.Count != 6 || len(st.List) != 1 || st.List[0].Name != "TestTable/case_4" {
		t.Fatalf("TestTable's subtests: %+v; want 6, of which case_4 reaches the plan's sites", st)
	}
	if st := load("TestSeq").Subtests; st == nil || st.Count != 2 || len(st.List) != 1 || st.List[0].Name != "TestSeq/use" {
		t.Fatalf("TestSeq's subtests: %+v; want 2, of which use reaches the plan's sites", st)
	}

	o.Runs = 2
	var out strings.Builder
	o.Stderr = &out
	if _, err := Detect(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	table = load("TestTable")
	if len(table.Runs) == 0 {
		t.Fatalf("TestTable did not run\n%s", out.String())
	}
	for _, r := range table.Runs {
		if r.Sub == "" {
			t.Errorf("TestTable run %d took the whole test", r.N)
		}
	}
	log, err := os.ReadFile(filepath.Join(o.WorkDir, "logs", "example.com", "subs", "TestTable.run1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "=== RUN   TestTable/case_4") || strings.Contains(string(log), "TestTable/case_0") {
		t.Errorf("run 1 of TestTable (-run %s) did not run case_4 alone:\n%s", table.Runs[0].Sub, log)
	}

	seq := load("TestSeq")
	if len(seq.Runs) != 2 || seq.Runs[0].Sub == "" || seq.Runs[1].Sub != "" || !seq.Subtests.Whole {
		t.Errorf("TestSeq: runs %+v, whole %v; want a run of its subtest use, then one of the whole test",
			seq.Runs, seq.Subtests.Whole)
	}
}

// TestDetectSubtestsThatNeedOthers: a run of only the subtest the pairs
// need fails because the subtest needs another; the failure is not the
// delays', so it neither counts as a run nor shows as a test broken by
// delays, and the runs after it take the whole test.
func TestDetectSubtestsThatNeedOthers(t *testing.T) {
	o, _ := preparedModule(t, "subs", subtestSrc, 3)
	o.Runs = 2
	var out strings.Builder
	o.Stderr = &out
	if _, err := Detect(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	p, err := plans.Load(filepath.Join(o.WorkDir, "plans", "example.com", "subs", "TestDep.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The pair's partner waits for a channel the delayed goroutine
	// closes, so the run of the whole test prunes it and no third run
	// follows.
	if len(p.Runs) < 2 || p.Runs[0].Sub == "" || p.Runs[0].Outcome != "fail" || !p.Subtests.Whole {
		t.Fatalf("TestDep: runs %+v, subtests %+v; want a failed run of its subtest use, then runs of the whole test\n%s", p.Runs, p.Subtests, out.String())
	}
	for _, r := range p.Runs[1:] {
		if r.Sub != "" || r.Outcome != "pass" {
			t.Errorf("TestDep run %d: -test.run pattern %q, %s; want the whole test, passing", r.N, r.Sub, r.Outcome)
		}
	}
	if s := out.String(); strings.Contains(s, "TestDep (detect)") || !strings.Contains(s, "took only some subtests") {
		t.Errorf("TestDep's failed run of some subtests shows as a problem, or its account does not name it:\n%s", s)
	}
}

// TestRanSubtests: a run log names the tests that ran subtests; a log
// read before is read again once it changed.
func TestRanSubtests(t *testing.T) {
	log := filepath.Join(t.TempDir(), "run.log")
	if err := os.WriteFile(log, []byte("=== RUN   TestA\n=== RUN   TestA/x\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- PASS: TestB (0.00s)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !ranSubtests(log, "TestA") || ranSubtests(log, "TestB") || ranSubtests(log, "TestC") {
		t.Errorf("TestA %v, TestB %v, TestC %v; want true, false, false", ranSubtests(log, "TestA"), ranSubtests(log, "TestB"), ranSubtests(log, "TestC"))
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("=== RUN   TestC\n=== RUN   TestC/y/z\n")
	f.Close()
	if !ranSubtests(log, "TestC") {
		t.Error("TestC after the log grew: false; want true")
	}
	if ranSubtests(filepath.Join(t.TempDir(), "none.log"), "TestA") || ranSubtests("", "TestA") {
		t.Error("a log that does not exist names subtests")
	}
}
