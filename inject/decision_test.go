package inject_test

// A crash while a goroutine is inside wafl's delay decision, run for real:
// TestScenarioDecision is a small "test under detection" that runs only in
// a child process TestMain set up with WAFL_MODE=detect (hook's init calls
// inject.Setup); TestCrashDuringDecision writes the plan and the site
// table, runs the child and judges it with internal/report. It lives here
// because only inject's tests can set the decision hook (export_test.go).
// Site ids and lines come from the "// site:N kind expr" markers below.

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/hook"
	"github.com/memorder/wafl/inject"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/plans"
)

// envScenario marks the child process.
const envScenario = "WAFL_TEST_SCENARIO"

const thisPackage = "github.com/memorder/wafl/inject"

func TestMain(m *testing.M) {
	if os.Getenv(envScenario) != "" {
		// hook's init has called inject.Setup (WAFL_MODE=detect);
		// hook.Finish drains, as the generated TestMain does.
		if hook.CurrentMode() != hook.ModeDetect {
			panic("scenario child without a detection run")
		}
		code := m.Run()
		hook.Finish()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

type handler struct{ n int }

// _waflInitAt is the scenario's stand-in for an instrumenter helper: it
// calls the hook and returns the value to store. Its name marks its frame
// as wafl machinery, so a traceback shows the caller's line, the site's.
func _waflInitAt(site uint32, p *atomic.Pointer[handler]) *handler {
	inject.At(site, unsafe.Pointer(p))
	return &handler{n: 1}
}

// TestScenarioDecision: a goroutine reaches the init at site 1 and stops
// inside wafl's delay decision (the decision hook blocks it there, before
// the delay is counted or logged); the test goroutine then uses h (site
// 2) and crashes on the nil. The crash is the bug, found while the delay
// was being decided.
func TestScenarioDecision(t *testing.T) {
	if os.Getenv(envScenario) == "" {
		t.Skip("scenario program: runs in a child process of TestCrashDuringDecision")
	}
	inDecision := make(chan struct{})
	inject.SetDecisionHook(func(site uint32) {
		if site == 1 {
			close(inDecision)
			select {} // stay in the decision until the crash
		}
	})
	var h atomic.Pointer[handler]
	go func() {
		h.Store(_waflInitAt(1, &h)) // site:1 atomic-store h
	}()
	<-inDecision
	inject.At(2, unsafe.Pointer(&h))
	_ = h.Load().n // site:2 use h
}

// TestCrashDuringDecision: a real crash while the delayed goroutine is
// inside wafl's delay decision (deterministic: the decision hook holds it
// there) is reported as a bug found during the decision.
func TestCrashDuringDecision(t *testing.T) {
	const ms = int64(time.Millisecond)
	p := &plans.Plan{Version: plans.Version, Params: plans.DefaultParams(),
		Provenance: plans.Provenance{Package: thisPackage},
		Locations: []plans.Location{{Site: 1, DelayNs: 50 * ms, MaxGapNs: 50 * ms, Prob: 1,
			Pairs: []plans.Pair{{Kind: plans.UseBeforeInit, First: 1, Second: 2, Count: 1, MinGapNs: 1, MaxGapNs: 50 * ms}}}}}
	res, out := runScenario(t, "TestScenarioDecision", p)
	if res.Status != report.BugFound {
		t.Fatalf("status %s reason %q, want bug\n%s", res.Status, res.Reason, out)
	}
	b := res.Bug
	if b.How != report.HowDecision || b.Kind != plans.UseBeforeInit || b.Delayed.Site != 1 || b.Failing.Site != 2 || b.Delay.Goroutine == 0 {
		t.Fatalf("bug %+v, want use-before-init 1 → 2 found during the delay decision\n%s", b, out)
	}
	if len(res.Log.Delays) != 0 {
		t.Errorf("the log counts %d delays; the decision had not counted one", len(res.Log.Delays))
	}
}

// runScenario runs one scenario program of this file as a detection run
// with plan p and judges it.
func runScenario(t *testing.T, test string, p *plans.Plan) (*report.RunResult, string) {
	t.Helper()
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	if err := plans.Save(planPath, p); err != nil {
		t.Fatal(err)
	}
	logPath, crashPath := filepath.Join(dir, "run.log"), filepath.Join(dir, "crash.txt")
	wenv := []string{
		abi.Env(abi.EnvMode, abi.ModeDetect),
		abi.Env(abi.EnvPlan, planPath),
		abi.Env(abi.EnvSeed, "0"),
		abi.Env(abi.EnvRun, "1"),
		abi.Env(abi.EnvLog, logPath),
		abi.Env(abi.EnvCrash, crashPath),
	}
	args := []string{"-test.run=^" + test + "$", "-test.count=1", "-test.v", "-test.timeout=2m"}
	cmd := exec.Command(os.Args[0], args...)
	// GOTRACEBACK is left to the runtime, which asks for all goroutines;
	// the race runtime's sleep at exit is turned off.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOTRACEBACK=") {
			env = append(env, kv)
		}
	}
	env = append(env, envScenario+"=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Env = append(env, wenv...)
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
	res, err := report.Outcome(report.RunInput{
		Plan: p, PlanPath: planPath, Sites: scenarioSites(t),
		Package: thisPackage, Test: test,
		Binary: os.Args[0], Args: args, Env: wenv, Run: 1,
		LogPath: logPath, CrashPath: crashPath, Stderr: out.Bytes(), ExitCode: code,
		Duration: time.Since(start),
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, out.String()
}

var markerRE = regexp.MustCompile(`// site:(\d+) (\S+) (.+)$`)

// scenarioSites builds the site table of this file from its
// "// site:N kind expr" markers.
func scenarioSites(t *testing.T) *sites.Table {
	t.Helper()
	path, err := filepath.Abs("decision_test.go")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab := &sites.Table{Version: sites.Version, Package: thisPackage}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		m := markerRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		tab.Sites = append(tab.Sites, sites.Site{ID: uint32(id), Kind: m[2], File: path, Line: line,
			Col: strings.IndexFunc(sc.Text(), func(r rune) bool { return r != '\t' }) + 1, Expr: m[3], Func: "scenario"})
	}
	if len(tab.Sites) != 2 {
		t.Fatalf("decision_test.go: %d site markers, want 2", len(tab.Sites))
	}
	return tab
}
