package pipeline

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/memorder/wafl/inject/report"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

// Detect runs every selected test that has delay candidates with planned
// delays, until a bug shows or o.Runs runs are used, saving the plan after
// every run, and writes reports for the bugs found.
func Detect(ctx context.Context, o Options) (*Summary, error) {
	ws, err := o.setup()
	if err != nil {
		return nil, err
	}
	if !o.SeedSet {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			return nil, err
		}
		o.Seed = binary.LittleEndian.Uint64(b[:]) >> 1 // keep it positive when printed as int64
	}
	sum := new(Summary)
	pkgs, err := build(ctx, &o, ws, sum, true)
	if err != nil {
		return nil, err
	}
	jobs := jobsOf(pkgs)
	prog := newProgress(o.Stderr)
	var tabs siteTables
	err = sum.phase("detect", func() error {
		prog.Begin("detect", len(jobs))
		return forEach(ctx, o.Parallel, jobs, func(j job) {
			bugs, msg := detectTest(ctx, &o, ws, sum, prog, &tabs, j)
			prog.Done(bugs, "%s.%s: %s", j.pkg.ImportPath, j.test, msg)
		})
	})
	prog.Close()
	if err != nil {
		return nil, err
	}
	sort.Slice(sum.Bugs, func(i, k int) bool {
		a, b := sum.Bugs[i], sum.Bugs[k]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		return a.Test < b.Test
	})
	if err := emitReports(&o, ws, sum.Bugs); err != nil {
		return nil, err
	}
	sum.Print(o.Stderr, true)
	fmt.Fprintf(o.Stderr, "seed:     %d (repeat with --seed %d)\n", o.Seed, o.Seed)
	fmt.Fprintf(o.Stderr, "%d bugs found\n", len(sum.Bugs))
	return sum, nil
}

// siteTables caches each binary's site table.
type siteTables struct {
	mu   sync.Mutex
	tabs map[string]*sites.Table
}

func (s *siteTables) get(path string) (*sites.Table, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tabs[path]; ok {
		return t, nil
	}
	t, err := sites.Load(path)
	if err != nil {
		return nil, err
	}
	if s.tabs == nil {
		s.tabs = map[string]*sites.Table{}
	}
	s.tabs[path] = t
	return t, nil
}

// detectTest runs the detection runs of one test. It returns the number of
// bugs found and a one-line account.
func detectTest(ctx context.Context, o *Options, ws *workspace, sum *Summary, prog *progress, tabs *siteTables, j job) (int, string) {
	pkg, test := j.pkg.ImportPath, j.test
	planPath := ws.planPath(pkg, test)
	plan, err := plans.Load(planPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		prog.Printf("%s.%s has no plan yet: preparing it first\n", pkg, test)
	case err != nil:
		prog.Printf("%s.%s: unreadable plan (%v): preparing it again\n", pkg, test, err)
	case plan.Provenance.BinaryHash != j.pkg.hash:
		prog.Printf("%s.%s: the package changed since its plan was made: preparing it again\n", pkg, test)
	}
	// Bugs this plan already found on this very build are still there:
	// report them again, so that rerunning detect does not pass.
	var known []*report.Bug
	if err != nil || plan.Provenance.BinaryHash != j.pkg.hash {
		msg := prepareTest(ctx, o, ws, sum, j) // counts the test and its candidates
		if plan, err = plans.Load(planPath); err != nil {
			return 0, "not prepared: " + msg
		}
	} else {
		known = knownBugs(ws, plan, pkg, test)
		for _, b := range known {
			prog.Printf("known bug %s in %s.%s (found in run %d, seed %d); delete %s to forget it\n",
				b.Kind, pkg, test, b.Run, b.Seed, planPath)
		}
		sum.add(func(s *Summary) {
			s.Tests++
			s.Bugs = append(s.Bugs, known...)
			if !plan.Empty() {
				s.WithCandidates++
			}
		})
	}
	if plan.Empty() {
		if len(known) > 0 {
			return len(known), fmt.Sprintf("%d known bug(s), no other delay candidates", len(known))
		}
		return 0, "no delay candidates"
	}
	o.applyDetect(&plan.Params)
	tab, err := tabs.get(j.pkg.Sites)
	if err != nil {
		sum.problem(Problem{pkg, test, "detect", err.Error()})
		return 0, "error"
	}
	var failures []string
	for k := 0; k < o.Runs; k++ {
		if plan.Empty() {
			break
		}
		n := len(plan.Runs) + 1
		seed := o.Seed + uint64(k)
		base := ws.logPath(pkg, test, "run"+strconv.Itoa(n))
		logPath, crashPath := base+".wlog", base+".crash"
		os.Remove(logPath)
		os.Remove(crashPath)
		// The run reads a copy of the plan: the live plan changes after
		// every run, and the copy is what the report's reproduce command
		// needs to repeat this run's decisions.
		runPlan := base + ".plan.json"
		if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
			sum.problem(Problem{pkg, test, "detect", err.Error()})
			return 0, "error"
		}
		if err := plans.Save(runPlan, plan); err != nil {
			sum.problem(Problem{pkg, test, "detect", err.Error()})
			return 0, "error"
		}
		env := []string{
			"WAFL_MODE=detect",
			"WAFL_PLAN=" + runPlan,
			"WAFL_SEED=" + strconv.FormatUint(seed, 10),
			"WAFL_RUN=" + strconv.Itoa(n),
			"WAFL_LOG=" + logPath,
			"WAFL_CRASH=" + crashPath,
		}
		if len(o.Ablate) > 0 {
			env = append(env, "WAFL_ABLATE="+strings.Join(o.Ablate, ","))
		}
		sub, skip := o.subtestArgs()
		tr := testRun{Binary: j.pkg.Binary, Dir: j.pkg.Dir, Test: test, Sub: sub, Skip: skip, Env: env, Timeout: o.Timeout, Output: base + ".log"}
		res, err := tr.run(ctx)
		if err != nil {
			sum.problem(Problem{pkg, test, "detect", err.Error()})
			return 0, "error"
		}
		output, _ := os.ReadFile(res.Output)
		rr, err := report.Outcome(report.RunInput{
			Plan: plan, PlanPath: runPlan, Sites: tab,
			Package: pkg, Test: test, Binary: j.pkg.Binary,
			Args: tr.args(),
			Env:  env, Run: n, Seed: seed,
			LogPath: logPath, CrashPath: crashPath, Stderr: output,
			ExitCode: res.ExitCode, Killed: res.TimedOut && res.ExitCode == -1, Duration: res.Duration,
			// The live plan marks the pair as found, so reproducing starts
			// from a fresh plan; the env/binary line repeats the run exactly.
			Reproduce: fmt.Sprintf("wafl prepare --run '^%s$' %s && wafl detect --runs 1 --seed %d --run '^%s$' %s",
				test, pkg, seed, test, pkg),
		})
		if err != nil {
			sum.problem(Problem{pkg, test, "detect", err.Error()})
			return 0, "error"
		}
		plan.ApplyRun(rr.PlanOutcome())
		if err := plans.Save(planPath, plan); err != nil {
			sum.problem(Problem{pkg, test, "detect", err.Error()})
			return 0, "error"
		}
		sum.add(func(s *Summary) { s.Runs++; s.Delays += rr.Run.Delays })
		switch rr.Status {
		case report.BugFound:
			rr.Bug.Runs = k + 1
			sum.add(func(s *Summary) { s.Bugs = append(s.Bugs, rr.Bug) })
			prog.Printf("BUG %s in %s.%s (run %d, seed %d): %s\n", rr.Bug.Kind, pkg, test, n, seed, rr.Bug.Panic)
			return 1 + len(known), fmt.Sprintf("%s after %d run(s)", rr.Bug.Kind, k+1)
		case report.TimedOut:
			sum.problem(Problem{pkg, test, "detect", fmt.Sprintf("run %d timed out (%s); output in %s", n, rr.Reason, res.Output)})
			return 0, "timeout"
		case report.SetupFailed:
			sum.problem(Problem{pkg, test, "detect", rr.Reason})
			return 0, "error"
		case report.Fail:
			if rr.Known != nil {
				// The panic is a bug already on record, reached again.
				continue
			}
			failures = append(failures, fmt.Sprintf("run %d: %s (output in %s)", n, rr.Reason, res.Output))
		}
	}
	if len(failures) > 0 {
		sum.problem(Problem{pkg, test, "detect", "failed under delays without a MEMORDER panic wafl could attribute:\n" + strings.Join(failures, "\n")})
	}
	if len(known) > 0 {
		return len(known), fmt.Sprintf("%d known bug(s), no new bug", len(known))
	}
	return 0, "no bug"
}

// reportBase is the path, without extension, of a test's report files.
func reportBase(ws *workspace, pkg, test string) string {
	return filepath.Join(ws.reportDir(), filepath.FromSlash(pkg), test)
}

// knownBugs returns the bugs of the test's report file that the plan
// records as found.
func knownBugs(ws *workspace, plan *plans.Plan, pkg, test string) []*report.Bug {
	if len(plan.Bugs) == 0 {
		return nil
	}
	r, err := report.ReadJSON(reportBase(ws, pkg, test) + ".json")
	if err != nil {
		return nil
	}
	var bugs []*report.Bug
	for _, b := range r.Bugs {
		for _, pb := range plan.Bugs {
			if b.Delayed.Site == pb.Delayed && b.Failing.Site == pb.Failing && b.Kind == pb.Kind {
				bugs = append(bugs, b)
				break
			}
		}
	}
	return bugs
}

// emitReports writes each test's bugs as JSON and text under the work
// directory and prints them as the options ask.
func emitReports(o *Options, ws *workspace, bugs []*report.Bug) error {
	type key struct{ pkg, test string }
	byTest := map[key][]*report.Bug{}
	var order []key
	for _, b := range bugs {
		k := key{b.Package, b.Test}
		if _, ok := byTest[k]; !ok {
			order = append(order, k)
		}
		byTest[k] = append(byTest[k], b)
	}
	for _, k := range order {
		base := reportBase(ws, k.pkg, k.test)
		if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
			return err
		}
		var js, txt bytes.Buffer
		if err := report.WriteJSON(&js, byTest[k]); err != nil {
			return err
		}
		if err := report.WriteText(&txt, byTest[k], true); err != nil {
			return err
		}
		if err := os.WriteFile(base+".json", js.Bytes(), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(base+".txt", txt.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return printReports(o, ws.root, bugs)
}

// printReports prints bugs as text (or JSON with --json) to stdout and
// writes SARIF when asked.
func printReports(o *Options, root string, bugs []*report.Bug) error {
	if o.JSON {
		if err := report.WriteJSON(o.Stdout, bugs); err != nil {
			return err
		}
	} else if len(bugs) > 0 {
		if err := report.WriteText(o.Stdout, bugs, false); err != nil {
			return err
		}
	}
	if o.SARIF != "" {
		var buf bytes.Buffer
		if err := report.WriteSARIF(&buf, bugs, report.SARIFOptions{ToolVersion: "wafl", Root: root}); err != nil {
			return err
		}
		if err := os.WriteFile(o.SARIF, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--sarif: %v", err)
		}
	}
	return nil
}

// PrintReports prints the given report files, or every report in the work
// directory, and returns the number of bugs.
func PrintReports(o Options, files []string) (int, error) {
	ws, err := o.setup()
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		err := filepath.WalkDir(ws.reportDir(), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return fs.SkipAll
				}
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".json") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if len(files) == 0 {
			fmt.Fprintf(o.Stderr, "no reports in %s\n", ws.reportDir())
			return 0, nil
		}
	}
	var bugs []*report.Bug
	for _, f := range files {
		r, err := report.ReadJSON(f)
		if err != nil {
			return 0, err
		}
		bugs = append(bugs, r.Bugs...)
	}
	return len(bugs), printReports(&o, ws.root, bugs)
}
