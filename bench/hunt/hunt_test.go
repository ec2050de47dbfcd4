package hunt

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memorder/wafl/bench/fieldruns"
	"github.com/memorder/wafl/internal/pipeline"
)

func TestModuleList(t *testing.T) {
	mods, err := fieldruns.LoadModules("../scripts/hunt/modules.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 50 {
		t.Errorf("%d modules pinned, want at least 50", len(mods))
	}
	names, paths := map[string]bool{}, map[string]bool{}
	for _, m := range mods {
		if names[m.Name] {
			t.Errorf("name %s twice", m.Name)
		}
		names[m.Name] = true
		key := m.Path + " " + strings.Join(m.Patterns, " ")
		if paths[key] {
			t.Errorf("%s twice", key)
		}
		paths[key] = true
		if m.Note == "" {
			t.Errorf("%s: no reason given for choosing it", m.Name)
		}
		if strings.ContainsAny(m.Name, "/ ") {
			t.Errorf("%s: a name is a file name (results/<name>.json)", m.Name)
		}
	}
}

func TestParseGoTest(t *testing.T) {
	out := `--- FAIL: TestA (0.01s)
    a_test.go:10: boom
    --- FAIL: TestA/sub (0.00s)
--- FAIL: TestB (0.00s)
FAIL
FAIL	ex.com/m	0.05s
ok  	ex.com/m/ok	0.01s
# ex.com/m/broken
broken/x.go:3:1: syntax error
FAIL	ex.com/m/broken [build failed]
panic: test timed out after 10m0s
	running tests:
		TestSlow (10m0s)
FAIL	ex.com/m/slow	600.1s
--- FAIL: TestC (0.00s)
FAIL
FAIL	ex.com/m/c	0.01s
FAIL
`
	got := ParseGoTest(out)
	want := []string{"ex.com/m.TestA", "ex.com/m.TestB", "ex.com/m/broken", "ex.com/m/slow", "ex.com/m/c.TestC"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseGoTest = %q, want %q", got, want)
	}
	if got := ParseGoTest("ok  \tex.com/m\t0.1s\n"); got != nil {
		t.Errorf("passing run: %q", got)
	}
}

// problems renders problems as wafl prints them and reads them back as
// fieldruns does, so that a change of wafl's wording breaks this test.
func problems(t *testing.T, ps ...pipeline.Problem) []string {
	t.Helper()
	s := &pipeline.Summary{Packages: 3, PackagesBuilt: 2, Problems: ps}
	var buf bytes.Buffer
	s.Print(&buf, true)
	sum := fieldruns.ParseSummary(buf.String())
	if len(sum.Problems) != len(ps) {
		t.Fatalf("parsed %d problems of %d:\n%s", len(sum.Problems), len(ps), buf.String())
	}
	return sum.Problems
}

func TestClassify(t *testing.T) {
	ps := problems(t,
		pipeline.Problem{Package: "ex.com/m", Test: "TestSleepy", Phase: "detect", Reason: "failed under delays without a MEMORDER panic wafl could attribute (a delay may have broken a timing assumption of the test; --skip leaves it out):\n" +
			"run 1: test failed: m_test.go:20: want 1, got 0; last delay before it: 12ms at m.go:10 (store s.x), goroutine 7 (output in /w/wafl/logs/ex.com/m/TestSleepy.run1.log)\n" +
			"run 3: test failed: m_test.go:20: want 1, got 0; no delay was injected (output in /w/wafl/logs/ex.com/m/TestSleepy.run3.log)"},
		pipeline.Problem{Package: "ex.com/m", Test: "TestHang", Phase: "detect", Reason: "run 2 timed out (panic: test timed out after 2m42s\nrunning tests:\n\tTestHang (2m42s)); output in /w/wafl/logs/ex.com/m/TestHang.run2.log"},
		pipeline.Problem{Package: "ex.com/m", Test: "TestFlaky", Phase: "detect", Reason: "failed under delays without a MEMORDER panic:\nrun 1: x (output in /w/wafl/logs/ex.com/m/TestFlaky.run1.log)"},
		pipeline.Problem{Package: "ex.com/m", Test: "TestPlainBad", Phase: "prepare", Reason: "test failed without delays"},
		pipeline.Problem{Package: "ex.com/m", Test: "TestInstr", Phase: "prepare", Reason: "test failed without delays"},
		pipeline.Problem{Package: "ex.com/m", Test: "TestInstr", Phase: "prepare", Reason: "fails without delays on this build of the package, in an earlier run"},
		pipeline.Problem{Package: "ex.com/m/v2", Phase: "build", Reason: "building instrumented test binary: boom"},
		pipeline.Problem{Package: "ex.com/m/plainbroken", Phase: "build", Reason: "does not compile"},
		pipeline.Problem{Package: "ex.com/m", Test: "TestW", Phase: "analyze", Reason: "warning: trace truncated"},
		pipeline.Problem{Package: "ex.com/m", Test: "TestA", Phase: "analyze", Reason: "reading trace: bad"},
		pipeline.Problem{Package: "ex.com/m", Test: "TestWaits", Phase: "learn", Reason: "hung without delays in a recording run (the run of its package's tests that learn timed out after 2m42s while it ran; it passed in the preparation run): output in logs/ex.com/m/_package.learn.log"},
	)
	plain := map[string]bool{"ex.com/m.TestPlainBad": true, "ex.com/m.TestFlaky": true, "ex.com/m/plainbroken": true}
	broken, errs := Classify(ps, plain)
	if len(broken) != 4 {
		t.Fatalf("broken = %+v, want 4", broken)
	}
	byTest := map[string]Broken{}
	for _, b := range broken {
		if b.Package != "ex.com/m" {
			t.Errorf("package %q", b.Package)
		}
		byTest[b.Test] = b
	}
	if b := byTest["TestSleepy"]; b.Kind != "fail" || len(b.Runs) != 2 || b.FailsPlain || !strings.Contains(b.Runs[0], "last delay before it: 12ms") {
		t.Errorf("TestSleepy: %+v", b)
	}
	if b := byTest["TestHang"]; b.Kind != "timeout" || len(b.Runs) != 1 || !strings.HasPrefix(b.Runs[0], "run 2 timed out (panic: test timed out after 2m42s running tests: TestHang (2m42s))") {
		t.Errorf("TestHang: %+v", b)
	}
	if b := byTest["TestWaits"]; b.Kind != "no-delay hang" || len(b.Runs) != 1 || !strings.HasPrefix(b.Runs[0], "hung without delays") {
		t.Errorf("TestWaits: %+v", b)
	}
	if b := byTest["TestFlaky"]; !b.FailsPlain {
		t.Errorf("TestFlaky fails plainly too: %+v", b)
	}
	var kinds []string
	for _, e := range errs {
		kinds = append(kinds, e.Kind+" "+e.What)
	}
	want := []string{"analyze ex.com/m.TestA", "prepare ex.com/m.TestInstr", "build ex.com/m/v2"}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("wafl errors = %q, want %q", kinds, want)
	}
	if m := reOutput.FindStringSubmatch(byTest["TestSleepy"].Runs[0]); m == nil || m[1] != "/w/wafl/logs/ex.com/m/TestSleepy.run1.log" {
		t.Errorf("output path: %q", m)
	}
	if m := reOutput.FindStringSubmatch(byTest["TestHang"].Runs[0]); m == nil || m[1] != "/w/wafl/logs/ex.com/m/TestHang.run2.log" {
		t.Errorf("output path of a timeout: %q", m)
	}
}

func TestCommandErrors(t *testing.T) {
	crash := []byte("prepare [1/2] ...\npanic: runtime error: index out of range\n\ngoroutine 1 [running]:\ngithub.com/memorder/wafl/analyze.Run(...)\n")
	if e := commandErrors("prepare", Step{Ran: true, Timing: fieldruns.Timing{Exit: 2}}, crash); len(e) != 1 || e[0].Kind != "crash" ||
		e[0].Reason != "panic: runtime error: index out of range" {
		t.Errorf("crash: %+v", e)
	}
	if e := commandErrors("detect", Step{Ran: true, Timing: fieldruns.Timing{Exit: 1}}, []byte("1 bug found\n")); e != nil {
		t.Errorf("exit 1 is bugs found, not an error: %+v", e)
	}
	if e := commandErrors("detect", Step{Ran: true, Timing: fieldruns.Timing{Exit: 2}}, []byte("wafl: no package\n")); len(e) != 1 || e[0].Kind != "exit" {
		t.Errorf("exit 2: %+v", e)
	}
	if e := commandErrors("detect", Step{Ran: true, Timing: fieldruns.Timing{Exit: -1, TimedOut: true, Wall: 900}}, nil); len(e) != 1 || e[0].Kind != "timeout" {
		t.Errorf("timeout: %+v", e)
	}
	// A test's panic in wafl's output is not wafl's crash.
	if waflPanic([]byte("panic: boom\n\ngoroutine 5:\nex.com/m.TestX(...)\n")) {
		t.Error("a panic without wafl's packages taken for wafl's")
	}
}

func TestKeepAndResume(t *testing.T) {
	dir := t.TempDir()
	work, results := filepath.Join(dir, "work"), filepath.Join(dir, "results")
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(work, "reports/ex.com/m/TestA.json"), `{"kind":"use-before-init"}`)
	write(filepath.Join(work, "reports/ex.com/m/TestA.txt"), "use-before-init: ...")
	log := filepath.Join(work, "logs/ex.com/m/TestB.run1.log")
	write(log, strings.Repeat("x", logTail)+"TAIL")
	r := &Result{Name: "m", Module: "ex.com/m", Version: "v1.0.0", Patterns: []string{"./..."}, Status: "ok",
		Wafl: &fieldruns.Result{Bugs: []fieldruns.BugRef{{Package: "ex.com/m", Test: "TestA", File: "reports/ex.com/m/TestA.json"}}},
		Broken: []Broken{{Package: "ex.com/m", Test: "TestB", Kind: "fail",
			Runs: []string{"run 1: failed; last delay before it: 1ms (output in " + log + ")"}}}}
	r.keep(results, work)
	if len(r.Reports) != 1 || r.Reports[0].Copy != "m/reports/ex.com/m/TestA.txt" {
		t.Fatalf("reports = %+v", r.Reports)
	}
	if _, err := os.Stat(filepath.Join(results, "m/reports/ex.com/m/TestA.json")); err != nil {
		t.Error(err)
	}
	if len(r.Broken[0].Logs) != 1 {
		t.Fatalf("logs = %q", r.Broken[0].Logs)
	}
	data, err := os.ReadFile(filepath.Join(results, r.Broken[0].Logs[0]))
	if err != nil || len(data) != logTail || !strings.HasSuffix(string(data), "TAIL") {
		t.Errorf("log tail: %d bytes, %v", len(data), err)
	}

	if err := r.Save(results); err != nil {
		t.Fatal(err)
	}
	m := fieldruns.Module{Name: "m", Path: "ex.com/m", Version: "v1.0.0", Patterns: []string{"./..."}}
	back, err := LoadResult(ResultPath(results, "m"))
	if err != nil || !back.Matches(m) {
		t.Errorf("stored result does not match its module: %+v %v", back, err)
	}
	m2 := m
	m2.Skip = "^TestSlow$"
	m3 := m
	m3.Version = "v1.0.1"
	if back.Matches(m2) || back.Matches(m3) {
		t.Error("a changed skip or version matches the stored result")
	}
	if none, err := LoadResult(ResultPath(results, "other")); none != nil || err != nil || none.Matches(m) {
		t.Errorf("missing result: %v %v", none, err)
	}
}

func TestMarkdown(t *testing.T) {
	mods := []fieldruns.Module{{Name: "m", Path: "ex.com/m", Version: "v1.0.0"}, {Name: "slow", Path: "ex.com/slow", Version: "v0.1.0"},
		{Name: "later", Path: "ex.com/later", Version: "v2.0.0"}}
	step := func(w, c float64) Step { return Step{Ran: true, Timing: fieldruns.Timing{Wall: w, CPU: c}} }
	day := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	w := &fieldruns.Result{Status: "ok", TestsRun: 40, WithCandidates: 3, DetectRuns: 9, DelaysSummary: 20}
	w.Stats = fieldruns.Stats{Candidates: 4, Runs: 9, Delays: 21, PairsFrom: map[string]int{"observed": 5, "learn": 1, "mirror": 1, "static": 3, "predicted": 2}}
	results := map[string]*Result{
		"m": {Name: "m", Module: "ex.com/m", Version: "v1.0.0", Status: "ok", WaflCommit: "abc1234", Machine: "2 CPUs (X)",
			Date: day, LoadStart: 1.5, LoadEnd: 2.5,
			Plain: step(2, 3), Prepare: step(6, 9), Detect: step(4, 6), Wafl: w,
			Reports: []Report{{BugRef: fieldruns.BugRef{Package: "ex.com/m", Test: "TestA", Kind: "use-before-init", Panic: "nil pointer",
				Delayed: "a.go:3 s.p (store) in Start", Failing: "a.go:9 s.p (use) in loop"}, Copy: "m/reports/ex.com/m/TestA.txt"}},
			Broken:     []Broken{{Package: "ex.com/m", Test: "TestB", Kind: "fail", Runs: []string{"run 1: want 1 got 0"}, Logs: []string{"m/logs/ex.com/m/TestB.run1.log"}}},
			WaflErrors: []WaflError{{Kind: "build", What: "ex.com/m/v2", Reason: "boom\nsecond line"}},
			Race:       Step{Ran: true, Timing: fieldruns.Timing{Wall: 20, CPU: 30}, Races: 1, Failed: []string{"ex.com/m.TestR"}},
			WarmWafl:   step(5, 8), PrepareFromStore: true},
		"slow": {Name: "slow", Module: "ex.com/slow", Version: "v0.1.0", Status: "ok", WaflCommit: "abc1234", Machine: "2 CPUs (X)",
			Date: day, LoadStart: 3, LoadEnd: 1,
			Plain: step(60, 70), Race: Step{Ran: true, Timing: fieldruns.Timing{Wall: 900, Exit: -1, TimedOut: true}},
			Prepare: step(100, 150), Detect: step(50, 60), Wafl: &fieldruns.Result{Status: "ok"}},
	}
	// Two rows above -race: one bound by its longest test (prepare 10 s
	// + a chain of detection runs of 25 s over -race's 20 s), one not;
	// and one made before the critical path was collected.
	long := &fieldruns.Result{Status: "ok"}
	long.Stats = fieldruns.Stats{LongestPrepNs: 10e9, LongestPrepTest: "ex.com/long.TestSleep", LongestChainNs: 25e9, LongestChainTest: "ex.com/long.TestSleep"}
	short := &fieldruns.Result{Status: "ok"}
	short.Stats = fieldruns.Stats{LongestPrepNs: 1e9, LongestPrepTest: "ex.com/short.TestA", LongestChainNs: 3e9, LongestChainTest: "ex.com/short.TestB"}
	for _, x := range []struct {
		name string
		w    *fieldruns.Result
	}{{"long", long}, {"short", short}, {"old", &fieldruns.Result{Status: "ok"}}} {
		mods = append(mods, fieldruns.Module{Name: x.name, Path: "ex.org/" + x.name, Version: "v1.0.0"})
		results[x.name] = &Result{Name: x.name, Module: "ex.org/" + x.name, Version: "v1.0.0", Status: "ok", WaflCommit: "abc1234",
			Machine: "2 CPUs (X)", Date: day, LoadStart: 2, LoadEnd: 2, Plain: step(18, 5), Race: step(20, 10), Prepare: step(12, 4), Detect: step(30, 5), Wafl: x.w}
	}
	// Two rows above -race in CPU time: one whose prepare (0.8 of -race's
	// CPU) and detection runs (0.4) reach it alone, one whose runs carry
	// no CPU time (a wafl older than the field).
	spin := &fieldruns.Result{Status: "ok"}
	spin.Stats = fieldruns.Stats{Runs: 6, RunsWithCPU: 6, RunsCPUNs: 4e9}
	spinOld := &fieldruns.Result{Status: "ok"}
	spinOld.Stats = fieldruns.Stats{Runs: 3}
	for _, x := range []struct {
		name string
		w    *fieldruns.Result
	}{{"spin", spin}, {"spinold", spinOld}} {
		mods = append(mods, fieldruns.Module{Name: x.name, Path: "ex.org/" + x.name, Version: "v1.0.0"})
		results[x.name] = &Result{Name: x.name, Module: "ex.org/" + x.name, Version: "v1.0.0", Status: "ok", WaflCommit: "abc1234",
			Machine: "2 CPUs (X)", Date: day, LoadStart: 2, LoadEnd: 2, Plain: step(10, 8), Race: step(12, 10), Prepare: step(5, 8), Detect: step(6, 6), Wafl: x.w}
	}
	// A -race run that hung in a test is not compared.
	mods = append(mods, fieldruns.Module{Name: "hang", Path: "ex.org/hang", Version: "v1.0.0"})
	results["hang"] = &Result{Name: "hang", Module: "ex.org/hang", Version: "v1.0.0", Status: "ok", WaflCommit: "abc1234",
		Machine: "2 CPUs (X)", Date: day, LoadStart: 2, LoadEnd: 2, Plain: step(7, 1), Prepare: step(6, 1), Detect: step(30, 1),
		Race: Step{Ran: true, Timing: fieldruns.Timing{Wall: 600, CPU: 2, Exit: 1}, Failed: []string{"ex.org/hang"}, Hung: true},
		Wafl: &fieldruns.Result{Status: "ok"}}
	inv := Invocation{Commit: "abc1234", Machine: "2 CPUs (X)", LoadStart: [3]float64{1, 2, 3}, LoadEnd: [3]float64{4, 5, 6},
		Start: day, End: day.Add(time.Hour)}
	md := Markdown(mods, results, inv, "../bench/scripts/hunt/results", nil, "")
	for _, want := range []string{
		"**wafl abc1234** · machine: 2 CPUs (X) · load average (1/5/15 min) at start 1.00/2.00/3.00, at end 4.00/5.00/6.00",
		"1-min load at a module's start 1.50–3.00, at its end 1.00–2.50",
		"| ex.com/m@v1.0.0 | 40 | 4 | 7 / 3 / 2 | 21 | 9 | 1 | 1 | 1 | 2.0s / 3.0s | 20s / 30s | 6.0s / 9.0s ˢ | 4.0s / 6.0s | 0.50 / 0.50 |",
		"ˢ: prepare took the test binaries that the untimed build had left in wafl's build store",
		"1 such rows (below -race: wall 1, CPU 1)",
		"| ex.com/slow@v0.1.0 | 0 | 0 | 0 / 0 / 0 | 0 | 0 | 0 | 0 | 0 | 60s / 70s | timeout (900s) | 100s / 150s ᶜ | 50s / 60s | — |",
		"wall on 3, CPU on 4, both on 1 of 6 modules",
		"Of 1 rows above `-race` in CPU time with these numbers, 1 reach it with prepare and the detection runs' processes alone",
		"what wafl's own work adds is the last column (1 rows above were made before the numbers were collected)",
		"| spin | 1.40 | 1.25 | 0.80 | 0.40 (6 runs) | 0.20 |",
		"ᶜ: a row made before the hunt built the instrumented test binaries once untimed",
		"[m/reports/ex.com/m/TestA.txt](../bench/scripts/hunt/results/m/reports/ex.com/m/TestA.txt)",
		"- **m** ex.com/m.TestB (fail)\n  - run 1: want 1 got 0\n  - log tail: [m/logs/ex.com/m/TestB.run1.log]",
		"- **m** ex.com/m/v2 (build): boom ⏎ second line",
		"`go test -race` reported 1 data race(s): ex.com/m.TestR",
		"1 modules: later.",
		"Of 2 rows above `-race` with these numbers, 1 have a floor ≥ 1",
		"(1 rows above were made before the numbers were collected)",
		"- hang: a test hung under `go test -race` until go test's timeout (600s; it passed plainly), so the row is not compared with -race: ex.org/hang",
		"| 600s / 2.0s | 6.0s / 1.0s ᶜ | 30s / 1.0s | — |",
		"| long | 2.10 | 1.75 | 10s (TestSleep) | 25s (TestSleep) |",
		"| short | 2.10 | 0.20 | 1.0s (TestA) | 3.0s (TestB) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "\n| ex.com/") + strings.Count(md, "\n| ex.org/"); n != 8 {
		t.Errorf("%d rows, want 8", n)
	}
	for _, line := range strings.Split(md, "\n") {
		if (strings.HasPrefix(line, "| ex.com/") || strings.HasPrefix(line, "| ex.org/")) && strings.Count(line, " | ") != 13 {
			t.Errorf("row with %d cells, want 14: %s", strings.Count(line, " | ")+1, line)
		}
	}
}

func TestSourceCommit(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Skipf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module ex.com/w\n")
	write("a/a.go", "package a\n")
	git("add", "-A")
	git("commit", "-qm", "code")
	code := git("rev-parse", "--short", "HEAD")
	write("bench/b.go", "package b\n")
	write("docs/x.md", "x\n")
	git("add", "-A")
	git("commit", "-qm", "harness")
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	if got := SourceCommit(filepath.Join(dir, "bin")); got != code {
		t.Errorf("SourceCommit = %q, want %q (the commit of the code, not of bench/)", got, code)
	}
	write("a/a.go", "package a // changed\n")
	if got := SourceCommit(dir); got != code+"+dirty" {
		t.Errorf("SourceCommit with a changed Go file = %q", got)
	}
}

func TestTriage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "triage.tsv")
	os.WriteFile(path, []byte("# comment\nm\tex.com/m.TestB\tartifact\tdeadline\ta 400ms delay against a 250ms write timeout\n"+
		"m\terror:ex.com/m/v2\tfalse report\twafl bug\tinstrumented code took a call's address\n"), 0o644)
	tri, err := LoadTriage(path)
	if err != nil {
		t.Fatal(err)
	}
	run := []*Result{{Name: "m",
		Reports:    []Report{{BugRef: fieldruns.BugRef{Package: "ex.com/m", Test: "TestA"}}},
		Broken:     []Broken{{Package: "ex.com/m", Test: "TestB", Kind: "fail"}},
		WaflErrors: []WaflError{{Kind: "build", What: "ex.com/m/v2", Reason: "boom"}}}}
	s := triageSection(run, tri)
	for _, want := range []string{
		"2 of 3 items classified: 1 artifact, 1 false report.",
		"| artifact | deadline | 1 | 0 / 1 / 0 | m |",
		"| false report | wafl bug | 1 | 0 / 0 / 1 | m |",
		"### artifact: deadline (1)\n\n- **m** ex.com/m.TestB (broken): a 400ms delay against a 250ms write timeout",
		"### Not triaged yet (1)\n\n- **m** ex.com/m.TestA (report)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("triage section lacks %q:\n%s", want, s)
		}
	}
	if got := verdictLine(tri, "m", "ex.com/m.TestB"); !strings.Contains(got, "**artifact** (deadline)") {
		t.Errorf("verdict line %q", got)
	}
	for _, bad := range []string{"m\tx\tbogus\tc\tr\n", "m\tx\tartifact\tc\n", "m\tx\tartifact\tc\tr\nm\tx\tartifact\tc\tr\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := LoadTriage(path); err == nil {
			t.Errorf("LoadTriage(%q): no error", bad)
		}
	}
	if tri, err := LoadTriage(filepath.Join(dir, "none.tsv")); err != nil || len(tri) != 0 {
		t.Errorf("missing file: %v, %v", tri, err)
	}
}

func TestHung(t *testing.T) {
	if !Hung([]byte("ok\npanic: test timed out after 10m0s\n\trunning tests:\n")) || Hung([]byte("--- FAIL: TestX (0.01s)\nFAIL\n")) {
		t.Fatal("Hung misreads go test output")
	}
}

// TestTrash: Trash sets a directory aside under the work directory (its
// files kept until EmptyTrash) and ignores one that does not exist.
func TestTrash(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "m", "wafl")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Trash(work, dir); err != nil {
		t.Fatal(err)
	}
	if err := Trash(work, filepath.Join(work, "m", "absent")); err != nil {
		t.Errorf("Trash of a missing directory: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Trash (%v)", dir, err)
	}
	kept, _ := filepath.Glob(filepath.Join(work, trashDir, "*", "plan.json"))
	if len(kept) != 1 {
		t.Errorf("trash holds %v; want the one plan set aside", kept)
	}
	if err := EmptyTrash(work); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(work, trashDir)); !os.IsNotExist(err) {
		t.Errorf("trash still there after EmptyTrash (%v)", err)
	}
}
