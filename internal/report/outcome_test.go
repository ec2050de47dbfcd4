package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

const ms = int64(time.Millisecond)

var markerRE = regexp.MustCompile(`// site:(\d+) (\S+) (.+)$`)

// scenarioSites builds the site table of scenario_test.go from its
// "// site:N kind expr" markers.
func scenarioSites(t *testing.T) *sites.Table {
	t.Helper()
	path, err := filepath.Abs("scenario_test.go")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byID := map[int]sites.Site{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		m := markerRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		byID[id] = sites.Site{ID: uint32(id), Kind: m[2], File: path, Line: line,
			Col: strings.IndexFunc(sc.Text(), func(r rune) bool { return r != '\t' }) + 1, Expr: m[3], Func: "scenario"}
	}
	tab := &sites.Table{Version: sites.Version, Package: "github.com/memorder/wafl/internal/report"}
	for id := 1; id <= len(byID); id++ {
		s, ok := byID[id]
		if !ok {
			t.Fatalf("scenario_test.go: site ids must be dense; site %d missing", id)
		}
		tab.Sites = append(tab.Sites, s)
	}
	return tab
}

// pairLoc is a plan location with one pair.
func pairLoc(kind plans.Kind, first, second uint32, delay int64) plans.Location {
	return plans.Location{Site: first, DelayNs: delay, MaxGapNs: delay, Prob: 1,
		Pairs: []plans.Pair{{Kind: kind, First: first, Second: second, Count: 1, MinGapNs: 1, MaxGapNs: delay}}}
}

func newPlan(locs ...plans.Location) *plans.Plan {
	return &plans.Plan{Version: plans.Version, Params: plans.DefaultParams(), Locations: locs,
		Provenance: plans.Provenance{Package: "github.com/memorder/wafl/internal/report"}}
}

type runOpts struct {
	noSeed  bool // leave WAFL_SEED unset
	ablate  string
	seed    uint64
	run     int
	badPlan bool
}

// runScenario runs one scenario program as a detection run and judges it.
func runScenario(t *testing.T, test string, p *plans.Plan, o runOpts) (*RunResult, string) {
	t.Helper()
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	if o.badPlan {
		planPath = filepath.Join(dir, "missing.json")
	} else if err := plans.Save(planPath, p); err != nil {
		t.Fatal(err)
	}
	if o.run == 0 {
		o.run = 1
	}
	logPath, crashPath := filepath.Join(dir, "run.log"), filepath.Join(dir, "crash.txt")
	wenv := []string{
		abi.EnvMode + "=" + abi.ModeDetect,
		abi.EnvPlan + "=" + planPath,
		abi.EnvSeed + "=" + strconv.FormatUint(o.seed, 10),
		abi.EnvRun + "=" + strconv.Itoa(o.run),
		abi.EnvLog + "=" + logPath,
		abi.EnvCrash + "=" + crashPath,
		abi.EnvAblate + "=" + o.ablate,
	}
	if o.noSeed {
		wenv = append(wenv[:2], wenv[3:]...)
	}
	// The race runtime sleeps 1 s at exit by default; the child's races
	// would show in its output anyway.
	renv := []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	args := []string{"-test.run=^" + test + "$", "-test.count=1", "-test.v", "-test.timeout=2m"}
	cmd := exec.Command(os.Args[0], args...)
	// GOTRACEBACK is left to the runtime, which asks for all goroutines.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOTRACEBACK=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(append(append(env, envScenario+"=1"), renv...), wenv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	res, err := Outcome(RunInput{
		Plan: p, PlanPath: planPath, Sites: scenarioSites(t),
		Package: "github.com/memorder/wafl/internal/report", Test: test,
		Binary: os.Args[0], Args: args, Env: wenv, Run: o.run, Seed: o.seed,
		LogPath: logPath, CrashPath: crashPath, Stderr: out.Bytes(), ExitCode: code,
		Duration: time.Since(start),
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, out.String()
}

// retry runs a scheduling-dependent scenario up to 3 times until ok.
func retry(t *testing.T, what string, run func() (*RunResult, string), ok func(*RunResult) bool) (*RunResult, string) {
	t.Helper()
	var res *RunResult
	var out string
	for attempt := 1; attempt <= 3; attempt++ {
		res, out = run()
		if ok(res) {
			return res, out
		}
		t.Logf("attempt %d: %s not seen: status %s %s", attempt, what, res.Status, res.Reason)
	}
	t.Fatalf("%s not seen in 3 attempts; last run: status %s, reason %q\n%s", what, res.Status, res.Reason, out)
	return nil, ""
}

func TestBugUseBeforeInit(t *testing.T) {
	p := newPlan(pairLoc(plans.UseBeforeInit, 1, 2, 400*ms))
	res, out := retry(t, "use-before-init", func() (*RunResult, string) {
		return runScenario(t, "TestScenarioUseBeforeInit", p, runOpts{seed: 7})
	}, func(r *RunResult) bool { return r.Status == BugFound && r.Attr.Delay.ID != 0 }) // exposed by a logged delay, not the natural schedule
	b := res.Bug
	if b.Kind != plans.UseBeforeInit || b.Delayed.Site != 1 || b.Failing.Site != 2 {
		t.Fatalf("bug %s delayed %d failing %d, want use-before-init 1 → 2\n%s", b.Kind, b.Delayed.Site, b.Failing.Site, out)
	}
	if !b.Delay.InProgress {
		t.Errorf("the init's delay should be in progress at the crash")
	}
	if !res.Crash.Recovered || res.Crash.Kind != abi.PanicNilDeref {
		t.Errorf("crash: recovered %v kind %s; want a re-panicked nil dereference", res.Crash.Recovered, res.Crash.Kind)
	}
	if uint64(b.PanickingGoroutine) == b.Delay.Goroutine {
		t.Errorf("panicking goroutine %d is the delayed goroutine", b.PanickingGoroutine)
	}
	if !strings.HasSuffix(b.Failing.Frame, "TestScenarioUseBeforeInit") {
		t.Errorf("failing frame %q", b.Failing.Frame)
	}
	if len(res.Log.Prunes) != 0 {
		t.Errorf("unsynchronized pair pruned by HB inference: %+v", res.Log.Prunes)
	}
	if b.Seed != 7 || b.Run != 1 || !strings.Contains(b.Reproduce.Wafl, "--seed 7") || !slices.Contains(b.Reproduce.Env, "WAFL_SEED=7") {
		t.Errorf("reproduce: %+v", b.Reproduce)
	}

	p.ApplyRun(res.PlanOutcome())
	if len(p.Bugs) != 1 || p.Bugs[0].Delayed != 1 || p.Bugs[0].Failing != 2 || p.Locations[0].Pairs[0].Pruned != plans.PrunedBug {
		t.Errorf("plan after the bug: bugs %+v, pair %+v", p.Bugs, p.Locations[0].Pairs[0])
	}
	if p.Locations[0].Prob != 1 {
		t.Errorf("the exposing delay decayed P to %v", p.Locations[0].Prob)
	}
	if len(p.Runs) != 1 || p.Runs[0].Outcome != "bug" || p.Runs[0].Delays != 1 {
		t.Errorf("run record %+v", p.Runs)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("updated plan invalid: %v", err)
	}
	var text bytes.Buffer
	if err := WriteText(&text, []*Bug{b}, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"USE-BEFORE-INIT", "scenario_test.go:", "h (atomic-store)", "400ms delay", "in progress", "goroutine " + strconv.FormatInt(b.PanickingGoroutine, 10) + " [running]"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

func TestBugUseAfterDispose(t *testing.T) {
	p := newPlan(pairLoc(plans.UseAfterDispose, 3, 4, 400*ms))
	res, out := retry(t, "use-after-dispose", func() (*RunResult, string) {
		return runScenario(t, "TestScenarioUseAfterDispose", p, runOpts{seed: 3})
	}, func(r *RunResult) bool { return r.Status == BugFound && r.Attr.Delay.ID != 0 }) // exposed by a logged delay, not the natural schedule
	b := res.Bug
	if b.Kind != plans.UseAfterDispose || b.Delayed.Site != 3 || b.Failing.Site != 3 || b.Partner == nil || b.Partner.Site != 4 {
		t.Fatalf("bug %+v, want use-after-dispose delayed and failing at 3, disposed at 4\n%s", b, out)
	}
	if !res.Attr.SameGoroutine || b.Delay.InProgress || res.Crash.Recovered {
		t.Errorf("attribution %+v, recovered %v", res.Attr, res.Crash.Recovered)
	}
	if len(b.Goroutines) < 2 {
		t.Errorf("crash has %d goroutines; the runtime should have set traceback level all", len(b.Goroutines))
	}
}

func TestBugThroughHooks(t *testing.T) {
	p := newPlan(pairLoc(plans.UseAfterDispose, 15, 16, 400*ms))
	res, _ := retry(t, "use-after-dispose through the hooks", func() (*RunResult, string) {
		return runScenario(t, "TestScenarioHooks", p, runOpts{seed: 15})
	}, func(r *RunResult) bool { return r.Status == BugFound && r.Attr.Delay.ID != 0 }) // exposed by a logged delay, not the natural schedule
	if res.Bug.Kind != plans.UseAfterDispose || res.Bug.Delayed.Site != 15 || res.Bug.Failing.Site != 15 {
		t.Errorf("bug %+v", res.Bug)
	}
}

// TestBugReorderedUseBeforeInit: the use-before-init shows as a double
// close after ℓ2, attributed through the logged reorder.
func TestBugReorderedUseBeforeInit(t *testing.T) {
	p := newPlan(pairLoc(plans.UseBeforeInit, 18, 17, 300*ms))
	res, out := retry(t, "reordered use-before-init", func() (*RunResult, string) {
		return runScenario(t, "TestScenarioCheckThenAct", p, runOpts{seed: 17})
	}, func(r *RunResult) bool { return r.Status == BugFound && r.Attr.Delay.ID != 0 }) // exposed by a logged delay, not the natural schedule
	b := res.Bug
	if b.Kind != plans.UseBeforeInit || !b.Reordered || b.Delayed.Site != 18 || b.Failing.Site != 19 ||
		b.Partner == nil || b.Partner.Site != 17 || res.Crash.Kind != abi.PanicCloseClosed {
		t.Fatalf("bug %+v (crash %s)\n%s", b, res.Crash.Kind, out)
	}
	p.ApplyRun(res.PlanOutcome())
	if len(p.Bugs) != 1 || p.Bugs[0].Failing != 17 || p.Locations[0].Pairs[0].Pruned != plans.PrunedBug {
		t.Errorf("plan bug %+v pair %+v", p.Bugs, p.Locations[0].Pairs[0])
	}
}

func TestBugAfterTestReturned(t *testing.T) {
	p := newPlan(pairLoc(plans.UseAfterDispose, 5, 6, 400*ms))
	res, out := retry(t, "use-after-dispose after the test returned", func() (*RunResult, string) {
		return runScenario(t, "TestScenarioAfterReturn", p, runOpts{seed: 5})
	}, func(r *RunResult) bool { return r.Status == BugFound && r.Attr.Delay.ID != 0 }) // exposed by a logged delay, not the natural schedule
	if !strings.Contains(out, "--- PASS: TestScenarioAfterReturn") {
		t.Errorf("the test function should have passed before the panic:\n%s", out)
	}
	if res.Bug.Kind != plans.UseAfterDispose || res.Bug.Failing.Site != 5 {
		t.Errorf("bug %+v", res.Bug)
	}
	if res.Log.Finish != nil {
		t.Errorf("the process finished the drain; it should have crashed during it")
	}
}

func TestNoBugUnrelatedPanic(t *testing.T) {
	p := newPlan(pairLoc(plans.UseBeforeInit, 7, 8, 5*ms))
	res, out := runScenario(t, "TestScenarioUnrelatedPanic", p, runOpts{})
	if res.Status != Fail || res.Bug != nil {
		t.Fatalf("status %s, want fail\n%s", res.Status, out)
	}
	if len(res.Log.Delays) != 1 || res.Crash == nil || res.Crash.Kind != abi.PanicNilDeref {
		t.Errorf("want one delay and a nil dereference; delays %d crash %+v", len(res.Log.Delays), res.Crash)
	}
	if !strings.Contains(res.Reason, "no instrumented site") {
		t.Errorf("reason %q", res.Reason)
	}
	p.ApplyRun(res.PlanOutcome())
	if len(p.Bugs) != 0 || p.Locations[0].Prob != 0.9 || p.Runs[0].Outcome != "fail" {
		t.Errorf("plan after an ordinary failure: bugs %v prob %v runs %+v", p.Bugs, p.Locations[0].Prob, p.Runs)
	}
}

// TestPanicWithoutDelayIsCredited: the panic at the pair's ℓ2 with no
// delay at all (ℓ1 never ran) is the bug all the same, on the natural
// schedule.
func TestPanicWithoutDelayIsCredited(t *testing.T) {
	p := newPlan(pairLoc(plans.UseBeforeInit, 10, 9, 5*ms))
	res, out := runScenario(t, "TestScenarioPanicWithoutDelay", p, runOpts{})
	if res.Status != BugFound || res.Bug.How != HowNatural || res.Bug.Failing.Site != 9 || res.Bug.Delayed.Site != 10 {
		t.Fatalf("status %s reason %q bug %+v, want a natural-schedule bug 10 → 9\n%s", res.Status, res.Reason, res.Bug, out)
	}
	if !strings.Contains(res.Bug.HowDetail, "no delay was decided") {
		t.Errorf("how detail %q", res.Bug.HowDetail)
	}
	o := res.PlanOutcome()
	if o.Bug == nil || o.Bug.Delayed != 10 || o.Bug.Failing != 9 {
		t.Errorf("plan outcome bug %+v", o.Bug)
	}
	var txt strings.Builder
	if err := WriteText(&txt, []*Bug{res.Bug}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "natural schedule") {
		t.Errorf("text report does not say how:\n%s", txt.String())
	}
}

func TestSetupError(t *testing.T) {
	res, out := runScenario(t, "TestScenarioUseBeforeInit", newPlan(pairLoc(plans.UseBeforeInit, 1, 2, ms)), runOpts{badPlan: true})
	if res.Status != SetupFailed || !strings.Contains(res.Reason, "missing.json") {
		t.Fatalf("status %s reason %q, want error naming the plan\n%s", res.Status, res.Reason, out)
	}
}

// TestInterferenceFigure42b shows the interference rule on the thesis's
// Figure 4.2b: with the rule the bug shows; without it both instances of
// the use are delayed, and the delayed dispose hides it.
func TestInterferenceFigure42b(t *testing.T) {
	plan := func() *plans.Plan {
		// The closing goroutine reaches site 11 80 ms after the worker;
		// a 250 ms delay covers that gap with 80 ms of slack either way.
		l := pairLoc(plans.UseAfterDispose, 11, 12, 250*ms)
		l.Interference = []uint32{11}
		p := newPlan(l)
		p.Params.Decay = 0 // P stays 1: every instance is a delay candidate
		return p
	}
	t.Run("rule on", func(t *testing.T) {
		res, _ := retry(t, "the bug with the interference rule", func() (*RunResult, string) {
			return runScenario(t, "TestScenarioInterference", plan(), runOpts{seed: 11})
		}, func(r *RunResult) bool { return r.Status == BugFound && r.Attr.Delay.ID != 0 }) // exposed by a logged delay, not the natural schedule
		if res.Bug.Kind != plans.UseAfterDispose || res.Bug.Failing.Site != 11 {
			t.Errorf("bug %+v", res.Bug)
		}
		skipped := false
		for _, s := range res.Log.Skips {
			skipped = skipped || (s.Site == 11 && s.By == 11 && s.Why == abi.SkipInterference)
		}
		if !skipped {
			t.Errorf("no interference skip at site 11 in the log")
		}
	})
	t.Run("rule off", func(t *testing.T) {
		// The designed interleaving: the worker's delay at 11 starts
		// first and the closing goroutine's delay at 11 overlaps it.
		res, out := retry(t, "both instances delayed, worker first", func() (*RunResult, string) {
			return runScenario(t, "TestScenarioInterference", plan(), runOpts{seed: 11, ablate: "interference"})
		}, func(r *RunResult) bool {
			d := r.Log.Delays
			return len(d) == 2 && d[0].Site == 11 && d[1].Site == 11 && d[0].G != d[1].G && d[1].Start < d[0].Start+d[0].Ns
		})
		if res.Status != Pass {
			t.Fatalf("without the interference rule the overlapping delays exposed the bug (status %s)\n%s", res.Status, out)
		}
		if len(res.Log.Skips) != 0 {
			t.Errorf("skips with the rule off: %+v", res.Log.Skips)
		}
	})
}

func TestHBInferencePrunesPair(t *testing.T) {
	p := newPlan(pairLoc(plans.UseBeforeInit, 13, 14, 100*ms))
	res, out := retry(t, "HB prune of (13, 14)", func() (*RunResult, string) {
		return runScenario(t, "TestScenarioHB", p, runOpts{seed: 13})
	}, func(r *RunResult) bool { return len(r.Log.Prunes) == 1 })
	if res.Status != Pass {
		t.Fatalf("status %s\n%s", res.Status, out)
	}
	pr := res.Log.Prunes[0]
	if pr.First != 13 || pr.Second != 14 || pr.G == pr.DelayG || float64(pr.Gap) < 0.5*float64(pr.DelayNs) {
		t.Errorf("prune %+v", pr)
	}
	p.ApplyRun(res.PlanOutcome())
	l := p.Location(13)
	if l.Pairs[0].Pruned != plans.PrunedHB || l.Live() || l.Delays != 1 || l.Prob != 0.9 {
		t.Errorf("location after the run: %+v", *l)
	}
	if p.Runs[0].Pruned != 1 || p.Runs[0].Delays != 1 || p.Runs[0].Outcome != "pass" {
		t.Errorf("run %+v", p.Runs[0])
	}
}

func TestPassWithProbabilityZero(t *testing.T) {
	l := pairLoc(plans.UseBeforeInit, 1, 2, 400*ms)
	l.Prob = 0
	p := newPlan(l)
	res, out := runScenario(t, "TestScenarioUseBeforeInit", p, runOpts{})
	if res.Status != Pass || len(res.Log.Delays) != 0 || res.Log.Finish == nil {
		t.Fatalf("status %s, %d delays, finish %v\n%s", res.Status, len(res.Log.Delays), res.Log.Finish, out)
	}
}

func TestSeedDrawnByRuntime(t *testing.T) {
	l := pairLoc(plans.UseBeforeInit, 1, 2, 400*ms)
	l.Prob = 0
	res, out := runScenario(t, "TestScenarioUseBeforeInit", newPlan(l), runOpts{noSeed: true})
	if res.Log.Setup == nil || res.Log.Setup.SeedSet || res.Run.Seed != res.Log.Setup.Seed || res.Run.Seed == 0 {
		t.Fatalf("setup %+v, run seed %d\n%s", res.Log.Setup, res.Run.Seed, out)
	}
}

// TestSeedReproducesDecisions: the same seed and plan delay the same
// dynamic instances in separate processes; another seed does not.
func TestSeedReproducesDecisions(t *testing.T) {
	plan := func() *plans.Plan {
		l := pairLoc(plans.UseBeforeInit, 20, 21, ms)
		l.Prob = 0.5
		p := newPlan(l)
		p.Params.Decay = 0
		p.Params.GraceNs = ms
		return p
	}
	delayed := func(seed uint64) []uint64 {
		res, out := runScenario(t, "TestScenarioRepeat", plan(), runOpts{seed: seed})
		if res.Status != Pass {
			t.Fatalf("status %s\n%s", res.Status, out)
		}
		var ns []uint64
		for _, d := range res.Log.Delays {
			ns = append(ns, d.N)
		}
		return ns
	}
	a, b, c := delayed(1), delayed(1), delayed(2)
	if fmt.Sprint(a) != fmt.Sprint(b) || len(a) == 0 || len(a) == 20 {
		t.Fatalf("seed 1 delayed instances %v, then %v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 1 and 2 delayed the same instances %v", a)
	}
}

// TestPlanOutcomeDecay: from a log cut by a crash, ended delays decay their
// location; ten decays of 0.1 take it out of S; a cut delay does not decay;
// an ablated run decays nothing.
func TestPlanOutcomeDecay(t *testing.T) {
	var log bytes.Buffer
	fmt.Fprintln(&log, `{"ev":"setup","t":0,"run":2,"seed":9,"ablate":""}`)
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&log, `{"ev":"delay","t":%d,"id":%d,"site":1,"g":5,"ns":1000000}`+"\n", i*10, i)
		fmt.Fprintf(&log, `{"ev":"end","t":%d,"id":%d,"site":1,"g":5,"ns":1000000,"p":0.5}`+"\n", i*10+1, i)
	}
	fmt.Fprintln(&log, `{"ev":"delay","t":500,"id":11,"site":3,"g":6,"ns":1000000}`)
	fmt.Fprintln(&log, `{"ev":"end","t":501,"id":11,"site":3,"g":6,"ns":1000000,"p":0.9}`)
	fmt.Fprintln(&log, `{"ev":"delay","t":600,"id":12,"site":3,"g":6,"ns":1000000}`)
	fmt.Fprint(&log, `{"ev":"end","t":601,"id":12,"si`) // crash mid-line
	lg, err := ParseLog(&log)
	if err != nil {
		t.Fatal(err)
	}
	if !lg.Truncated || lg.Finish != nil || len(lg.Delays) != 12 || lg.Delays[11].Ended {
		t.Fatalf("log: truncated %v, %d delays, last ended %v", lg.Truncated, len(lg.Delays), lg.Delays[11].Ended)
	}
	p := newPlan(pairLoc(plans.UseBeforeInit, 1, 2, ms), pairLoc(plans.UseAfterDispose, 3, 4, ms))
	p.ApplyRun((&RunResult{Status: Pass, Log: lg, Run: plans.Run{N: 2, Outcome: "pass"}}).PlanOutcome())
	if l := p.Location(1); l.Prob != 0 || l.Live() || l.Delays != 10 {
		t.Errorf("location 1: prob %v live %v delays %d; want 0, false, 10", l.Prob, l.Live(), l.Delays)
	}
	if l := p.Location(3); l.Prob != 0.9 || l.Delays != 2 {
		t.Errorf("location 3: prob %v delays %d; want 0.9 (only the ended delay decays), 2", l.Prob, l.Delays)
	}
	// Ablated decay: nothing decays.
	lg.Setup.Ablate = "decay"
	p = newPlan(pairLoc(plans.UseBeforeInit, 1, 2, ms))
	p.ApplyRun((&RunResult{Log: lg}).PlanOutcome())
	if p.Locations[0].Prob != 1 {
		t.Errorf("decay ablated, prob %v", p.Locations[0].Prob)
	}
}

func TestOutcomeTimeoutAndExit(t *testing.T) {
	p := newPlan(pairLoc(plans.UseBeforeInit, 1, 2, ms))
	dir := t.TempDir()
	res, err := Outcome(RunInput{Plan: p, LogPath: filepath.Join(dir, "none.log"), Killed: true, ExitCode: -1, Duration: 3 * time.Second})
	if err != nil || res.Status != TimedOut || res.Run.Outcome != "timeout" {
		t.Fatalf("killed run: %+v, %v", res, err)
	}
	stderr := "panic: test timed out after 1s\n\trunning tests:\n\t\tTestX (1s)\n\ngoroutine 5 [running]:\ntesting.(*M).startAlarm.func1()\n\t/usr/local/go/src/testing/testing.go:2682 +0x345\n"
	res, _ = Outcome(RunInput{Plan: p, Stderr: []byte(stderr), ExitCode: 2})
	if res.Status != TimedOut {
		t.Errorf("test timeout panic: status %s", res.Status)
	}
	res, _ = Outcome(RunInput{Plan: p, Stderr: []byte("--- FAIL: TestX (0.00s)\n    x_test.go:5: boom\nFAIL\n"), ExitCode: 1})
	if res.Status != Fail || !strings.Contains(res.Reason, "TestX") {
		t.Errorf("failing test: %s %q", res.Status, res.Reason)
	}
	res, _ = Outcome(RunInput{Plan: p})
	if res.Status != Pass {
		t.Errorf("clean exit: %s", res.Status)
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	b := sampleBug()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, []*Bug{b}); err != nil {
		t.Fatal(err)
	}
	var generic struct {
		Bugs []map[string]any `json:"bugs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &generic); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kind", "panic", "package", "test", "delayed", "failing", "runs", "seed", "reproduce", "stacks", "goroutines", "delay"} {
		if _, ok := generic.Bugs[0][k]; !ok {
			t.Errorf("report JSON lacks %q", k)
		}
	}
	for _, side := range []string{"delayed", "failing"} {
		m := generic.Bugs[0][side].(map[string]any)
		if m["file"] == nil || m["line"] == nil {
			t.Errorf("%s lacks file or line: %v", side, m)
		}
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadJSON(path)
	if err != nil || len(r.Bugs) != 1 || r.Bugs[0].Delayed != b.Delayed || r.Bugs[0].Reproduce.Wafl != b.Reproduce.Wafl {
		t.Fatalf("round trip: %+v, %v", r, err)
	}
	if err := os.WriteFile(path, []byte(`{"version":1,"bugs":[{"kind":"data-race"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSON(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("bad kind: %v", err)
	}
}

func sampleBug() *Bug {
	return &Bug{
		Kind: plans.UseAfterDispose, Panic: "send on closed channel", Package: "example.com/p", Test: "TestClose",
		Delayed: Location{Site: 3, File: "/src/p/conn.go", Line: 40, Col: 2, Op: "send", Expr: "c.out", Func: "(*Conn).Send"},
		Failing: Location{Site: 3, File: "/src/p/conn.go", Line: 40, Col: 2, Op: "send", Expr: "c.out", Func: "(*Conn).Send", Frame: "example.com/p.(*Conn).Send"},
		Partner: &Location{Site: 7, File: "/src/p/conn.go", Line: 61, Op: "close", Expr: "c.out", Func: "(*Conn).Close"},
		Delay:   DelayInfo{Ns: 12 * ms, Goroutine: 21},
		Run:     2, Runs: 2, Seed: 99,
		Reproduce: Reproduce{Wafl: "wafl detect --run '^TestClose$' --seed 99 example.com/p", Command: []string{"/w/p.test", "-test.run=^TestClose$"}, Env: []string{"WAFL_SEED=99"}},
		Stacks:    "panic: send on closed channel\n\ngoroutine 21 [running]:\nexample.com/p.(*Conn).Send(...)\n\t/src/p/conn.go:40 +0x1\n",
	}
}

func TestSARIF(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, []*Bug{sampleBug()}, SARIFOptions{ToolVersion: "v0.1.0", Root: "/src"}); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string `json:"version"`
		Schema  string `json:"$schema"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			OriginalURIBaseIDs map[string]struct {
				URI string `json:"uri"`
			} `json:"originalUriBaseIds"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string `json:"uri"`
							URIBaseID string `json:"uriBaseId"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				RelatedLocations    []json.RawMessage `json:"relatedLocations"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name != "wafl" {
		t.Fatalf("sarif header: %s", buf.String())
	}
	run := log.Runs[0]
	if len(run.Results) != 1 {
		t.Fatalf("%d results", len(run.Results))
	}
	r := run.Results[0]
	if r.RuleID != "use-after-dispose" || run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID || r.Level != "error" {
		t.Errorf("rule %s index %d", r.RuleID, r.RuleIndex)
	}
	loc := r.Locations[0].PhysicalLocation
	if loc.ArtifactLocation.URI != "p/conn.go" || loc.ArtifactLocation.URIBaseID != "%SRCROOT%" || loc.Region.StartLine != 40 {
		t.Errorf("location %+v", loc)
	}
	if run.OriginalURIBaseIDs["%SRCROOT%"].URI != "file:///src/" {
		t.Errorf("originalUriBaseIds %+v", run.OriginalURIBaseIDs)
	}
	if len(r.RelatedLocations) != 2 || r.PartialFingerprints["waflBug/v1"] == "" || !strings.Contains(r.Message.Text, "--seed 99") {
		t.Errorf("related %d, fingerprints %v, message %q", len(r.RelatedLocations), r.PartialFingerprints, r.Message.Text)
	}
	buf.Reset()
	if err := WriteSARIF(&buf, nil, SARIFOptions{}); err != nil || !strings.Contains(buf.String(), `"results": []`) {
		t.Errorf("empty SARIF: %v\n%s", err, buf.String())
	}
}

// TestPlanOutcomeWaitInVain: a run log in which the dispose at 4 waited
// for the use at 3, and goroutine 5, the one that waited, was the first to
// reach 3 afterwards; and one in which the use at 3 came during the wait.
// The first marks the pair no_wait, the second does not.
func TestPlanOutcomeWaitInVain(t *testing.T) {
	for _, c := range []struct {
		name, delay string
		want        bool
	}{
		{"the waiter reached the use after its wait", `{"ev":"delay","t":101000000,"id":1,"site":3,"g":5,"ns":1000000}`, true},
		{"another goroutine reached it during the wait", `{"ev":"skip","t":50000000,"site":3,"g":6,"n":0,"why":"interference"}`, false},
	} {
		var log bytes.Buffer
		fmt.Fprintln(&log, `{"ev":"setup","t":0,"run":1,"seed":9,"ablate":""}`)
		fmt.Fprintln(&log, `{"ev":"await","t":100000000,"site":4,"g":5,"ns":100000000}`)
		fmt.Fprintln(&log, c.delay)
		fmt.Fprintln(&log, `{"ev":"loc","t":300000000,"site":3,"p":0.9,"live":true,"delays":1,"instances":1,"skip_prob":0}`)
		fmt.Fprintln(&log, `{"ev":"finish","t":300000000,"delays":1,"delay_ns":1000000}`)
		lg, err := ParseLog(&log)
		if err != nil {
			t.Fatal(err)
		}
		p := newPlan(pairLoc(plans.UseAfterDispose, 3, 4, ms))
		p.ApplyRun((&RunResult{Status: Pass, Log: lg, Run: plans.Run{N: 1, Outcome: "pass"}}).PlanOutcome())
		if got := p.Location(3).Pairs[0].NoWait; got != c.want {
			t.Errorf("%s: no_wait %v, want %v", c.name, got, c.want)
		}
	}
}
