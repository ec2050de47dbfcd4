package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

// Status is how a detection run ended.
type Status string

// Run statuses; the first four are also plans.Run.Outcome.
const (
	Pass        Status = "pass"    // the test passed
	BugFound    Status = "bug"     // a MEMORDER panic at a planned site (Attribution.How says how)
	Fail        Status = "fail"    // an ordinary test failure (not a bug wafl reports)
	TimedOut    Status = "timeout" // the run was killed or the test timed out
	SetupFailed Status = "error"   // the runtime could not set up the run (bad plan, log, ...)
)

// RunInput is what the CLI knows about one finished detection run.
type RunInput struct {
	// Plan is the plan the run used, before the run is folded in
	// (plans.Plan.ApplyRun); Outcome does not modify it.
	Plan     *plans.Plan
	PlanPath string       // the plan file the run read (WAFL_PLAN)
	Sites    *sites.Table // the binary's site table
	Package  string       // import path of the package under test
	Test     string       // test name
	Binary   string       // the test binary
	Args     []string     // arguments the binary ran with
	// Env are the WAFL_* variables the binary ran with, "KEY=value".
	Env  []string
	Run  int    // run number (WAFL_RUN)
	Seed uint64 // WAFL_SEED; the log's seed wins when the log has one
	// LogPath is WAFL_LOG and CrashPath WAFL_CRASH; Stderr is the
	// binary's standard error (parsed when the crash file is empty).
	LogPath   string
	CrashPath string
	Stderr    []byte
	ExitCode  int
	// Killed is set when the CLI killed the run at its timeout.
	Killed   bool
	Duration time.Duration
	CPU      time.Duration // user and system time of the test process
	// Reproduce, when set, is the wafl command line that repeats the run;
	// by default it is built from Package, Test and Seed.
	Reproduce string
}

// RunResult is the verdict on one detection run.
type RunResult struct {
	Status Status
	// Reason explains a Fail, TimedOut or SetupFailed status, or why a
	// panic was not attributed.
	Reason string
	Bug    *Bug         // set for BugFound
	Attr   *Attribution // set for BugFound
	Crash  *Crash       // the parsed crash, if the run panicked
	// Known is set for a Fail whose panic is at the failing site of a bug
	// the plan already records (the same bug, reached through another
	// delay): not a new bug, and no sign of a broken test either.
	Known *plans.Bug
	Log   *Log
	Run   plans.Run // the run record ApplyRun appends to the plan
}

// Outcome classifies a finished detection run: it reads the run log and
// the crash output, attributes a MEMORDER panic to an injected delay and
// builds the bug report. The error is for unreadable inputs (a log or
// crash file that exists but cannot be read), never for test failures.
func Outcome(in RunInput) (*RunResult, error) {
	if in.Plan == nil {
		return nil, errors.New("outcome: no plan")
	}
	res := &RunResult{}
	lg := &Log{Missing: true, byID: map[uint64]*Delay{}}
	if in.LogPath != "" {
		var err error
		if lg, err = ReadLog(in.LogPath); err != nil {
			return nil, err
		}
	}
	res.Log = lg
	// A basic-mode run found pairs online: they are part of the plan the
	// crash is judged against (the wafl process adds them for good with
	// ApplyRun).
	in.Plan = in.Plan.WithTraps(lg.PlanTraps())
	if lg.Setup != nil {
		// Without WAFL_SEED the runtime drew the seed; the log has it.
		in.Seed = lg.Setup.Seed
	}
	var crashText []byte
	if in.CrashPath != "" {
		data, err := os.ReadFile(in.CrashPath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("crash output: %w", err)
		}
		crashText = data
	}
	c := ParseCrash(crashText)
	if c == nil {
		c = ParseCrash(in.Stderr)
	}
	res.Crash = c
	// A run that failed without a crash may have recovered a MEMORDER
	// panic the runtime saw coming (checkact.go).
	var recovered *Attribution
	var recoveredWhy string
	if c == nil && in.ExitCode != 0 && in.ExitCode != abi.ExitSetup && !in.Killed && len(lg.Panics) > 0 {
		recovered, c, recoveredWhy = attributeRecovered(in.Plan, in.Sites, lg)
	}

	switch {
	case in.ExitCode == abi.ExitSetup && bytes.Contains(in.Stderr, []byte("wafl: detect:")):
		res.Status = SetupFailed
		res.Reason = setupError(in.Stderr)
	case in.Killed:
		res.Status = TimedOut
		res.Reason = fmt.Sprintf("killed after %v", in.Duration.Round(time.Millisecond))
	case c != nil && c.Kind == abi.PanicTimeout:
		res.Status = TimedOut
		res.Reason = c.Panic
	case recovered != nil:
		res.Status = BugFound
		res.Attr = recovered
		res.Crash = c
		res.Bug = newBug(in, recovered, c)
		res.Bug.Recovered = true
	case c != nil:
		a, why := Attribute(in.Plan, in.Sites, lg, c)
		if a != nil {
			res.Status = BugFound
			res.Attr = a
			res.Bug = newBug(in, a, c)
		} else if kb := knownBug(in.Plan, in.Sites, c); kb != nil {
			res.Status = Fail
			res.Known = kb
			f := siteLocation(in.Sites, kb.Failing)
			res.Reason = fmt.Sprintf("panic: %s: the known %s bug at %s:%d (found in run %d) showed again, not through a delay of its own pair",
				c.Panic, kb.Kind, f.File, f.Line, kb.Run)
		} else if a := creditPlanned(in.Plan, in.Sites, lg, c); a != nil {
			res.Status = BugFound
			res.Attr = a
			res.Bug = newBug(in, a, c)
			res.Bug.HowDetail = creditDetail(lg, a)
		} else {
			res.Status = Fail
			res.Reason = fmt.Sprintf("panic: %s: not a MEMORDER bug: %s", c.Panic, why)
		}
	case in.ExitCode != 0:
		res.Status = Fail
		res.Reason = fmt.Sprintf("exit status %d%s", in.ExitCode, failedTests(in.Stderr))
		if recoveredWhy != "" {
			res.Reason += fmt.Sprintf("; %d recovered MEMORDER panic(s), not attributed: %s", len(lg.Panics), recoveredWhy)
		}
	default:
		res.Status = Pass
	}
	if res.Bug != nil && res.Attr != nil {
		res.Bug.Spared = spared(in.Sites, lg, res.Attr.Delay)
	}
	res.Run = runRecord(in, res)
	return res, nil
}

// knownBug returns the plan's bug whose failing site the panicking
// goroutine's stack is at, with a panic that kind of bug produces.
func knownBug(p *plans.Plan, tab *sites.Table, c *Crash) *plans.Bug {
	g := c.Panicking()
	if g == nil || len(p.Bugs) == 0 || !c.Kind.Memorder() {
		return nil
	}
	ix := newSiteIndex(tab)
	for _, f := range g.Frames {
		if internalFrame(f) {
			continue
		}
		for _, id := range ix.lookup(f) {
			for i := range p.Bugs {
				if b := &p.Bugs[i]; b.Failing == id && allowed(b.Kind, c.Kind) {
					return b
				}
			}
		}
	}
	return nil
}

func setupError(stderr []byte) string {
	for _, l := range strings.Split(string(stderr), "\n") {
		if strings.HasPrefix(l, "wafl: detect:") {
			return strings.TrimSpace(l)
		}
	}
	return "runtime setup failed"
}

// failedTests lists the "--- FAIL" lines of go test output, if any.
func failedTests(out []byte) string {
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if f, ok := strings.CutPrefix(strings.TrimSpace(l), "--- FAIL: "); ok {
			names = append(names, f)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return ": --- FAIL: " + strings.Join(names, ", ")
}

func runRecord(in RunInput, res *RunResult) plans.Run {
	lg := res.Log
	r := plans.Run{N: in.Run, Seed: in.Seed, Outcome: string(res.Status), DurationNs: int64(in.Duration), CPUNs: int64(in.CPU)}
	if r.Outcome == string(SetupFailed) {
		r.Outcome = string(Fail)
	}
	r.Delays = len(lg.Delays)
	for _, d := range lg.Delays {
		if d.Ended {
			r.DelayNs += d.Actual
		} else {
			r.DelayNs += d.Ns
		}
	}
	if f := lg.Finish; f != nil {
		r.Skipped = int(f.SkipInterference + f.SkipCapGoroutine + f.SkipCapRun + f.SkipPartner)
		r.SkippedPartner = int(f.SkipPartner)
	} else {
		for _, sk := range lg.Skips {
			if sk.Why != abi.SkipProbability {
				r.Skipped++
			}
			if sk.Why == abi.SkipPartner {
				r.SkippedPartner++
			}
		}
	}
	r.Pruned = len(lg.Prunes)
	return r
}

// firstInstances returns, per site, the first instance the log records:
// the earliest delay or skipped delay there.
func (lg *Log) firstInstances() map[uint32]plans.Instance {
	first := map[uint32]plans.Instance{}
	note := func(site uint32, g uint64, t int64) {
		if f, ok := first[site]; !ok || t < f.T {
			first[site] = plans.Instance{G: g, T: t}
		}
	}
	for _, d := range lg.Delays {
		note(d.Site, d.G, d.Start)
	}
	for _, s := range lg.Skips {
		note(s.Site, s.G, s.T)
	}
	return first
}

// PlanOutcome describes the run for plans.Plan.ApplyRun, from the log, so
// that it works after a crash too: the delays the log records (the one
// that exposed the bug marked), the pairs happens-before inference pruned,
// the disposes that waited for a late partner (with the first logged
// instance of each location and the locations never reached), whether the run ablated
// decay, the run record and the bug, keyed by its pair.
func (res *RunResult) PlanOutcome() plans.RunOutcome {
	o := plans.RunOutcome{Run: res.Run}
	if lg := res.Log; lg != nil {
		o.Traps = lg.PlanTraps()
		o.NoDecay = lg.Ablated(abi.AblateDecay)
		o.Delays = make([]plans.RunDelay, len(lg.Delays))
		for i, d := range lg.Delays {
			o.Delays[i] = plans.RunDelay{Site: d.Site, Ended: d.Ended,
				Exposed: res.Attr != nil && res.Attr.Delay.ID != 0 && d.ID == res.Attr.Delay.ID}
		}
		for _, l := range lg.Late {
			o.Late = append(o.Late, plans.Late{First: l.First, Second: l.Second, NeedNs: l.NeedNs, DelayNs: l.DelayNs})
		}
		o.Pruned = make([]plans.PairID, len(lg.Prunes))
		for i, pr := range lg.Prunes {
			o.Pruned[i] = plans.PairID{First: pr.First, Second: pr.Second}
		}
		for _, a := range lg.Awaits {
			o.Waits = append(o.Waits, plans.Wait{Site: a.Site, G: a.G, End: a.T})
		}
		if len(lg.Awaits) > 0 {
			o.First = lg.firstInstances()
			for _, l := range lg.Locs {
				if l.Instances == 0 {
					o.Unreached = append(o.Unreached, l.Site)
				}
			}
		}
	}
	if a := res.Attr; a != nil {
		panicMsg := ""
		if res.Crash != nil {
			panicMsg = res.Crash.Panic
		}
		// The plan keys a bug by its pair: for a reordered use-before-init
		// that is ℓ2, not the later site that panicked.
		failing := a.Failing
		if a.Reordered {
			failing = a.Pair.Second
		}
		o.Bug = &plans.Bug{Kind: a.Kind, Delayed: a.Delay.Site, Failing: failing,
			Run: res.Run.N, Seed: res.Run.Seed, Panic: panicMsg}
	}
	return o
}
