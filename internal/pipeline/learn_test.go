package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/plans"
)

// lateSrc is a test whose racing goroutine is late in its first run (it
// counts its runs in a file next to it): it starts but reaches no access
// before the test ends, so the preparation run records its fork and no
// pair, the plan has no candidates and counts a late goroutine. The
// access is in a func value the goroutine calls, which the static reach
// of the go statement does not follow: no static pair stands in for it.
const lateSrc = `package late

import (
	"os"
	"strconv"
	"testing"
	"time"
)

type S struct{ p *int }

var deref = func(s *S) { _ = *s.p }

func runs(t *testing.T) int {
	b, _ := os.ReadFile("runs.txt")
	n, _ := strconv.Atoi(string(b))
	n++
	if err := os.WriteFile("runs.txt", []byte(strconv.Itoa(n)), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLate(t *testing.T) {
	s := &S{p: new(int)}
	done := make(chan struct{})
	first := runs(t) == 1
	go func() {
		if first { // in the first run the goroutine is late: no access before the test ends
			time.Sleep(time.Second)
			return
		}
		deref(s)
		close(done)
	}()
	time.Sleep(5 * time.Millisecond)
	s.p = nil
	if !first {
		<-done
	}
}
`

// writeFiles writes files (name → content) into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// preparedModule writes the module example.com/<name> with one test file
// src in a fresh directory, prepares it with one worker and checks that
// want tests got candidates. It returns detect's options for it (one run
// per test) and prepare's summary.
func preparedModule(t *testing.T, name, src string, want int) (DetectOptions, *Summary) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":          "module example.com/" + name + "\n\ngo 1.22\n",
		name + "_test.go": src,
	})
	o := DetectOptions{
		PrepareOptions: PrepareOptions{
			Common:   Common{Dir: dir, WorkDir: filepath.Join(dir, ".wafl")},
			Packages: Packages{Patterns: []string{"./..."}},
			Tests:    Tests{Parallel: 1},
		},
		Runs: 1,
	}
	sum, err := Prepare(context.Background(), o.PrepareOptions)
	if err != nil {
		t.Fatal(err)
	}
	if sum.WithCandidates != want {
		t.Fatalf("prepare: %d tests with candidates; want %d (problems %v)", sum.WithCandidates, want, sum.Problems)
	}
	return o, sum
}

// TestLearnWhenPlanHasNoCandidates: detect makes a recording run for a
// plan without candidates, merges what it finds, and the detection run
// that follows exposes the bug.
func TestLearnWhenPlanHasNoCandidates(t *testing.T) {
	o, sum := preparedModule(t, "late", lateSrc, 0)
	if sum.Prepared != 1 || sum.WithCandidates != 0 {
		t.Fatalf("prepare: %d prepared, %d with candidates; want 1, 0 (problems %v)", sum.Prepared, sum.WithCandidates, sum.Problems)
	}
	// Exposure depends on scheduling: a few detect calls, each of which
	// learns at most once before the plan has candidates.
	var bugs int
	for i := 0; i < 4 && bugs == 0; i++ {
		var err error
		sum, err = Detect(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		bugs = len(sum.Bugs)
		if i == 0 && (sum.LearnRuns != 1 || sum.Learned < 1) {
			t.Fatalf("first detect: %d learning runs, %d candidates learned; want 1, ≥ 1 (problems %v)", sum.LearnRuns, sum.Learned, sum.Problems)
		}
	}
	if bugs == 0 {
		t.Fatal("the learned pair exposed nothing in 4 detect calls")
	}
	p, err := plans.Load(filepath.Join(o.WorkDir, "plans", "example.com", "late", "TestLate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Provenance.Learned != 1 || p.Provenance.LearnedCandidates < 1 {
		t.Fatalf("provenance: learned %d, learned candidates %d", p.Provenance.Learned, p.Provenance.LearnedCandidates)
	}
}

// TestLearnOnlyLate: of a package's plans without candidates, those
// whose run had a late goroutine learn, a short test whose goroutines were
// all on time learns once, a longer one not at all; they learn in one
// recording process.
func TestLearnOnlyLate(t *testing.T) {
	dir := t.TempDir()
	lateA := strings.ReplaceAll(strings.ReplaceAll(lateSrc, "TestLate", "TestLateA"), "runs.txt", "runsA.txt")
	lateB := strings.ReplaceAll(strings.ReplaceAll(lateSrc, "TestLate", "TestLateB"), "runs.txt", "runsB.txt")
	lateB = lateB[strings.Index(lateB, "func runs"):]
	lateB = strings.ReplaceAll(strings.ReplaceAll(lateB, "func runs(", "func runsB("), "runs(t)", "runsB(t)")
	writeFiles(t, dir, map[string]string{
		"go.mod":    "module example.com/late\n\ngo 1.22\n",
		"a_test.go": lateA,
		"b_test.go": "package late\n\nimport (\n\t\"os\"\n\t\"strconv\"\n\t\"testing\"\n\t\"time\"\n)\n\n" + lateB,
		"ontime_test.go": `package late

import (
	"testing"
	"time"
)

func onTime() {
	s := &S{p: new(int)}
	done := make(chan struct{})
	go func() {
		_ = *s.p
		close(done)
	}()
	<-done
}

func TestShort(t *testing.T) { onTime() }

func TestOnTime(t *testing.T) {
	onTime()
	time.Sleep(300 * time.Millisecond)
}
`,
	})
	o := DetectOptions{
		PrepareOptions: PrepareOptions{
			Common:   Common{Dir: dir, WorkDir: filepath.Join(dir, ".wafl")},
			Packages: Packages{Patterns: []string{"./..."}},
			Tests:    Tests{Parallel: 1},
		},
		Runs: 1,
	}
	sum, err := Prepare(context.Background(), o.PrepareOptions)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Prepared != 4 || sum.WithCandidates != 0 {
		t.Fatalf("prepare: %d prepared, %d with candidates; want 4, 0 (problems %v)", sum.Prepared, sum.WithCandidates, sum.Problems)
	}
	if sum, err = Detect(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if sum.LearnRuns != 3 {
		t.Fatalf("detect: %d learning runs; want 3, of TestLateA, TestLateB and TestShort (problems %v)", sum.LearnRuns, sum.Problems)
	}
	if _, err := os.Stat(filepath.Join(o.WorkDir, "logs", "example.com", "late", pkgRunName+".learn.log")); err != nil {
		t.Fatalf("no shared recording run: %v", err)
	}
	// A second detect: TestShort has had its one run.
	if _, err := Detect(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for test, want := range map[string]int{"TestLateA": 1, "TestLateB": 1, "TestShort": 1, "TestOnTime": 0} {
		p, err := plans.Load(filepath.Join(o.WorkDir, "plans", "example.com", "late", test+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Provenance.Learned; got != want && !(want == 1 && got == 2 && len(p.Locations) == 0 && test != "TestShort") {
			t.Errorf("%s: learned in %d runs; want %d (late %v, duration %v)", test, got, want, p.Provenance.Late, time.Duration(p.Provenance.DurationNs))
		}
	}
}

// TestNoLearningWithoutForks: a plan without candidates whose trace has no
// fork (the test started no goroutine) is not re-learned: there was no late
// goroutine to miss, and a recording run per detect would be pure cost.
func TestNoLearningWithoutForks(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod": "module example.com/seq\n\ngo 1.22\n",
		"seq_test.go": `package seq

import "testing"

type S struct{ p *int }

func TestSeq(t *testing.T) {
	s := &S{p: new(int)}
	_ = *s.p
	s.p = nil
}
`,
	})
	o := DetectOptions{
		PrepareOptions: PrepareOptions{
			Common:   Common{Dir: dir, WorkDir: filepath.Join(dir, ".wafl")},
			Packages: Packages{Patterns: []string{"./..."}},
			Tests:    Tests{Parallel: 1},
		},
		Runs: 1,
	}
	if _, err := Prepare(context.Background(), o.PrepareOptions); err != nil {
		t.Fatal(err)
	}
	sum, err := Detect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.LearnRuns != 0 {
		t.Fatalf("detect made %d learning runs for a test without goroutines; want 0 (problems %v)", sum.LearnRuns, sum.Problems)
	}
}

// twoSrc: the goroutine's use of s.q, a near miss with the dispose of
// s.q, happens only from the test's second run on, so the preparation run
// finds the pair of s.p alone. The disposes wait for the goroutine (ready):
// delays expose nothing, the detection runs pass.
const twoSrc = `package two

import (
	"os"
	"strconv"
	"testing"
	"time"
)

type S struct{ p, q *int }

var derefQ = func(s *S) { _ = *s.q }

func runs(t *testing.T) int {
	b, _ := os.ReadFile("runs.txt")
	n, _ := strconv.Atoi(string(b))
	n++
	if err := os.WriteFile("runs.txt", []byte(strconv.Itoa(n)), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTwo(t *testing.T) {
	s := &S{p: new(int), q: new(int)}
	ready := make(chan struct{})
	later := runs(t) > 1
	go func() {
		if later {
			derefQ(s) // a func value: not in the go statement's static reach
		}
		_ = *s.p
		close(ready)
	}()
	time.Sleep(20 * time.Millisecond)
	<-ready
	s.q = nil
	s.p = nil
}
`

// TestDetectionRunsLearn: the first detection run of a detect call also
// records, and the pair the preparation run missed joins the plan, marked
// as found by a detection run.
func TestDetectionRunsLearn(t *testing.T) {
	o, _ := preparedModule(t, "two", twoSrc, 1)
	planPath := filepath.Join(o.WorkDir, "plans", "example.com", "two", "TestTwo.json")
	before, err := plans.Load(planPath)
	if err != nil {
		t.Fatal(err)
	}
	// The goroutine may be scheduled after the dispose on a loaded
	// machine: up to MaxDetectRecord detect calls, each records once.
	learned, recorded := 0, 0
	for i := 0; i < plans.MaxDetectRecord && learned == 0; i++ {
		sum, err := Detect(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Bugs) != 0 || len(sum.Problems) != 0 {
			t.Fatalf("detect: bugs %v, problems %v", sum.Bugs, sum.Problems)
		}
		if sum.DetectRecorded != 1 {
			t.Fatalf("detect call %d: %d recording detection runs, want 1", i+1, sum.DetectRecorded)
		}
		learned += sum.DetectLearned
		recorded += sum.DetectRecorded
	}
	if learned == 0 {
		t.Fatalf("no candidate learned in %d recording detection runs", recorded)
	}
	p, err := plans.Load(planPath)
	if err != nil {
		t.Fatal(err)
	}
	if p.Provenance.DetectRecorded != recorded || p.Provenance.DetectCandidates != learned {
		t.Fatalf("provenance: detect_recorded %d, detect_candidates %d; want %d, %d",
			p.Provenance.DetectRecorded, p.Provenance.DetectCandidates, recorded, learned)
	}
	if countPairs(p) != countPairs(before)+learned {
		t.Fatalf("%d pairs after, %d before, %d learned", countPairs(p), countPairs(before), learned)
	}
	fromDetect := 0
	for _, l := range p.Locations {
		for _, pr := range l.Pairs {
			if pr.From == plans.FromDetect {
				fromDetect++
			}
		}
	}
	if fromDetect != learned {
		t.Fatalf("%d pairs marked from detect, want %d", fromDetect, learned)
	}
	// The bound: no more recording once MaxDetectRecord runs recorded.
	for p.Provenance.DetectRecorded < plans.MaxDetectRecord {
		if _, err := Detect(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if p, err = plans.Load(planPath); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := Detect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.DetectRecorded != 0 {
		t.Fatalf("detect recorded after %d recording runs", plans.MaxDetectRecord)
	}
}

func countPairs(p *plans.Plan) int {
	n := 0
	for _, l := range p.Locations {
		n += len(l.Pairs)
	}
	return n
}

// TestLearningRunHangIsReported: a test that passed in the preparation
// run and hangs without delays in detect's recording run (here: on its
// second run, always) is a problem of phase "learn", not a silent loss of
// what that run would have learned.
func TestLearningRunHangIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a test binary until its timeout")
	}
	const src = `package hang

import (
	"os"
	"testing"
)

type S struct{ p *int }

func TestHangs(t *testing.T) {
	if _, err := os.Stat("ran"); err == nil {
		select {} // the second run never ends
	}
	if err := os.WriteFile("ran", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &S{p: new(int)}
	done := make(chan struct{})
	go func() { _ = *s.p; close(done) }()
	<-done
}
`
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"go.mod": "module example.com/hang\n\ngo 1.22\n", "hang_test.go": src})
	o := DetectOptions{
		PrepareOptions: PrepareOptions{
			Common:   Common{Dir: dir, WorkDir: filepath.Join(dir, ".wafl")},
			Packages: Packages{Patterns: []string{"./..."}},
			Tests:    Tests{Parallel: 1, Timeout: 3 * time.Second},
		},
		Runs: 1,
	}
	if sum, err := Prepare(context.Background(), o.PrepareOptions); err != nil || sum.Prepared != 1 || sum.WithCandidates != 0 {
		t.Fatalf("prepare: %v; summary %+v", err, sum)
	}
	sum, err := Detect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.LearnRuns != 1 {
		t.Fatalf("%d learning runs, want 1 (problems %v)", sum.LearnRuns, sum.Problems)
	}
	for _, p := range sum.Problems {
		if p.Test == "TestHangs" && p.Phase == "learn" && strings.HasPrefix(p.Reason, "hung without delays in a recording run") {
			return
		}
	}
	t.Fatalf("no learn problem for TestHangs: %+v", sum.Problems)
}

// TestLearnable: which plans without candidates get a recording run.
func TestLearnable(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		prov plans.Provenance
		want bool
	}{
		{"late goroutines", plans.Provenance{Events: 5000, Forks: n(10), Late: n(2)}, true},
		{"late goroutines, 1.5 s", plans.Provenance{Events: 5000, Forks: n(10), Late: n(2), DurationNs: 1500e6}, true},
		{"late goroutines, 5 s", plans.Provenance{Events: 5000, Forks: n(10), Late: n(2), DurationNs: 5e9}, false},
		{"older wafl (no counts)", plans.Provenance{Events: 5000}, true},
		{"no goroutine started", plans.Provenance{Events: 5000, Forks: n(0)}, false},
		{"on time, short", plans.Provenance{Events: 5000, Forks: n(3), Late: n(0), DurationNs: 50e6}, true},
		{"on time, long", plans.Provenance{Events: 5000, Forks: n(3), Late: n(0), DurationNs: 500e6}, false},
		{"learned enough", plans.Provenance{Events: 5000, Forks: n(10), Late: n(2), Learned: plans.MaxLearn}, false},
		{"a stress test's million goroutines", plans.Provenance{Events: 16_953_249, Forks: n(2_000_200), Late: n(1_000_000)}, false},
	} {
		p := &plans.Plan{Provenance: c.prov}
		if got := learnable(p); got != c.want {
			t.Errorf("%s: learnable %v, want %v", c.name, got, c.want)
		}
	}
}

// besideSrc: TestLearner's goroutine never runs before the test ends
// (its plan learns), and the test takes 1.5 s (within lateLearn); TestPair
// has a candidate pair that no delay can expose.
const besideSrc = `package beside

import (
	"testing"
	"time"
)

` + pairSrc + `
func TestLearner(t *testing.T) {
	go func() { time.Sleep(time.Hour) }()
	time.Sleep(1500 * time.Millisecond)
}

func TestPair(t *testing.T) { pair() }
`

// TestLearnBesideDetection: the package recording run of the tests that
// learn runs while the tests with candidates make their detection runs;
// they do not wait for it.
func TestLearnBesideDetection(t *testing.T) {
	o, _ := preparedModule(t, "beside", besideSrc, 1)
	o.Ablate = abi.AblateHB | abi.AblateDecay
	sum, err := Detect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.LearnRuns != 1 || sum.Runs != 1 || len(sum.Problems) != 0 {
		t.Fatalf("detect: %d learning runs, %d detection runs, problems %v; want 1, 1, none", sum.LearnRuns, sum.Runs, sum.Problems)
	}
	logs := filepath.Join(o.WorkDir, "logs", "example.com", "beside")
	learnEnd, err := os.Stat(filepath.Join(logs, "_package.learn.log"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := report.ReadLog(filepath.Join(logs, "TestPair.run1.wlog"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Setup == nil {
		t.Fatal("TestPair's run log has no setup")
	}
	if start := time.Unix(0, l.Setup.UnixNs); !start.Before(learnEnd.ModTime()) {
		t.Errorf("TestPair's detection run started at %v, after the learning run ended (%v)", start, learnEnd.ModTime())
	}
}
