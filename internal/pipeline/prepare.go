package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/analyze"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/internal/pipeline/workdir"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/plans"
)

// Prepare instruments and builds the packages, runs each test once
// delay-free with recording, and analyzes each trace into a plan.
func Prepare(ctx context.Context, o PrepareOptions) (*Summary, error) {
	s, err := workflow{
		common:   &o.Common,
		packages: &o.Packages,
		tests:    &o.Tests,
		phase:    "prepare",
		before: func(ctx context.Context, s *session, jobs []job) {
			if !o.PerTest && !o.Basic { // basic mode makes no recording run
				s.pkgRuns = runPackages(ctx, s, &o, jobs) // pkgprep.go
			}
		},
		each: func(ctx context.Context, s *session, j job) (int, string, error) {
			if pr := s.pkgRuns[j.pkg.ImportPath]; pr != nil && pr.kept[j.test] {
				if a, ok := pr.analyzed[j.test]; ok {
					return 0, a.note, a.err
				}
				note, err := preparedInPackage(ctx, s, &o, j, pr)
				return 0, note, err
			} else if a, ok := pr.againOf(j.test); ok {
				return 0, a.note, a.err
			}
			note, err := prepareTest(ctx, s, &o, j)
			return 0, note, err
		},
	}.run(ctx)
	if err != nil {
		return nil, err
	}
	defer s.unlock()
	if len(s.sum.Bugs) > 0 { // preparation runs that crashed with a MEMORDER panic
		if err := emitReports(&o.Common, Reports{}, s.ws, s.sum.Bugs); err != nil {
			return nil, err
		}
	}
	s.sum.Print(o.Stderr, false)
	if n := len(s.sum.Bugs); n > 0 {
		fmt.Fprintf(o.Stderr, "%s exposed without delays\n", plural(n, "bug", "bugs"))
	}
	return s.sum, s.finish(o.Stderr)
}

// prepareTest runs one test with recording and analyzes its trace into
// the test's plan. It returns a one-line account.
func prepareTest(ctx context.Context, s *session, o *PrepareOptions, j job) (string, error) {
	pkg, test := j.pkg.ImportPath, j.test
	if err := rememberedFailure(s.ws, j, o.RetryFailing); err != nil {
		s.sum.add(func(s *Summary) { s.Tests++; s.FailPlain++; s.Remembered++ })
		return "", err
	}
	raw := s.ws.RawTracePath(pkg, test)
	if err := os.MkdirAll(filepath.Dir(raw), 0o755); err != nil {
		return "", err
	}
	os.Remove(raw)
	if o.Basic {
		return basicPlan(s, o, j)
	}
	sub, skip := o.subtestArgs()
	load := loadFactor()
	res, err := s.start(ctx, j.pkg, testrun.Run{
		Sub:     sub,
		Skip:    skip,
		Binary:  j.pkg.Binary,
		Dir:     j.pkg.Dir,
		Test:    test,
		Env:     []string{abi.Env(abi.EnvMode, abi.ModeRecord), abi.Env(abi.EnvTrace, raw)},
		Timeout: o.Timeout,
		Output:  s.ws.LogPath(pkg, test, "prepare.log"),
		Extra:   o.binaryArgs(),
	}, raw)
	if err != nil {
		return "", err
	}
	s.sum.add(func(s *Summary) { s.Tests++ })
	switch {
	case res.TimedOut:
		err := fmt.Errorf("timed out after %s without delays; output in %s", o.Timeout, res.Output)
		rememberFailure(s.ws, j, "timeout", err.Error(), res.Output)
		s.sum.add(func(s *Summary) { s.FailPlain++ })
		return "", &testError{note: "timeout", err: err}
	case res.ExitCode != 0:
		if err := prepCrash(s, j, res, raw, sub, skip); err != nil {
			return "", err
		}
		err := fmt.Errorf("fails without delays (exit status %d); output in %s\n%s",
			res.ExitCode, res.Output, failureExcerpt(res.Output))
		rememberFailure(s.ws, j, "fails without delays", err.Error(), res.Output)
		s.sum.add(func(s *Summary) { s.FailPlain++ })
		return "", &testError{note: "fails without delays", err: err}
	}
	return analyzePrepared(ctx, s, o, j, raw, res.Output, load, res.Duration, 0, "")
}

// analyzePrepared analyzes the trace of a test's passing preparation run
// (alone, or split out of its package's run) into its plan. It returns
// the test's one-line account; more is added to it. runLog is the run's
// output; dropped are the events of its goroutines the package run
// dropped after its end.
func analyzePrepared(ctx context.Context, s *session, o *PrepareOptions, j job, raw, runLog string, load float64, d time.Duration, dropped int64, more string) (string, error) {
	forgetFailure(s.ws, j)
	params := o.Params
	params.LoadFactor = max(load, loadFactor()) // the queue before and after the run
	plan, stats, err := analyzeRun(ctx, s.ws, params, j, raw, dropped, d, runLog)
	if err != nil {
		return "", &testError{phase: "analyze", note: "analysis failed", err: err}
	}
	for _, w := range stats.Warnings {
		s.problem(j, "analyze", "warning: "+w)
	}
	s.sum.add(func(s *Summary) {
		s.Prepared++
		if !plan.Empty() {
			s.WithCandidates++
		}
	})
	countPredicted(s, stats)
	if stats.Predicted > 0 {
		more += fmt.Sprintf("; %d predicted for a late goroutine", stats.Predicted)
	}
	if stats.Static > 0 {
		more += fmt.Sprintf("; %d static", stats.Static)
		if stats.StaticLeft > 0 {
			more += fmt.Sprintf(" (%d more left out)", stats.StaticLeft)
		}
	}
	if stats.Thinned > 0 {
		more += fmt.Sprintf("; %d repeated uses thinned", stats.Thinned)
	}
	return fmt.Sprintf("%s, %s at %s (%s%s)", plural(int(stats.Events), "event", "events"),
		plural(stats.Candidates, "candidate pair", "candidate pairs"), plural(stats.Locations, "location", "locations"),
		d.Round(time.Millisecond), more), nil
}

// countPredicted adds an analysis's predicted and static pairs to the
// summary.
func countPredicted(s *session, stats *analyze.Stats) {
	if stats == nil || stats.Predicted == 0 && stats.Static == 0 && stats.StaticLeft == 0 {
		return
	}
	s.sum.add(func(s *Summary) {
		if stats.Predicted > 0 {
			s.Predicted += stats.Predicted
			s.PredictedTests++
		}
		if stats.Static > 0 || stats.StaticLeft > 0 {
			s.Static += stats.Static
			s.StaticLeft += stats.StaticLeft
			s.StaticTests++
		}
	})
}

// analyzeRun converts a raw trace to Arrow, analyzes it and saves the
// plan (analyzeFresh).
func analyzeRun(ctx context.Context, ws *workdir.Dir, params plans.Overrides, j job, raw string, dropped int64, d time.Duration, runLog string) (*plans.Plan, *analyze.Stats, error) {
	pkg, test := j.pkg.ImportPath, j.test
	plan, stats, err := analyzeFresh(ctx, ws, params, j, raw, dropped, d, runLog)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(filepath.Dir(ws.PlanPath(pkg, test)), 0o755); err != nil {
		return nil, nil, err
	}
	if err := plans.Save(ws.PlanPath(pkg, test), plan); err != nil {
		return nil, nil, err
	}
	return plan, stats, nil
}

// analyzeFresh converts a raw trace to Arrow and analyzes it into a plan,
// which it returns without saving it. dropped are the events of the
// test's goroutines that its package run dropped after the test's end:
// they make one more late goroutine (plans.Provenance.Late); d is how
// long the test ran (0: not known); runLog, when not "", the run's
// output, which names the subtests that ran (plans.Subtests).
func analyzeFresh(ctx context.Context, ws *workdir.Dir, params plans.Overrides, j job, raw string, dropped int64, d time.Duration, runLog string) (*plans.Plan, *analyze.Stats, error) {
	withSubs := ranSubtests(runLog, j.test)
	plan, stats, subs, err := analyzeTrace(ctx, ws, params, j, raw, ws.TracePath(j.pkg.ImportPath, j.test), nil, nil, withSubs)
	if err != nil {
		return nil, nil, err
	}
	if subs != nil && withSubs {
		plan.SetSubtests(subtestsOf(subs, j.test, runLog))
	}
	if stats != nil {
		late := int64(stats.Late)
		if dropped > 0 {
			late++
		}
		plan.SetLate(late)
	}
	plan.SetDuration(int64(d))
	return plan, stats, nil
}

// analyzeTrace analyzes the raw spill file raw of test j into a plan,
// which it returns without saving it, while it converts raw into the
// Arrow trace arrows, and removes raw. known, if not nil, is the plan the
// result will extend (analyze.Options.Known), and, when subs says the run
// ran subtests, which subtest each site ran under (nil when none was
// marked). With arrows "" (and subs false) it writes no Arrow trace: the
// trace of a detection run that also recorded, which nothing reads again.
func analyzeTrace(ctx context.Context, ws *workdir.Dir, params plans.Overrides, j job, raw, arrows string, known *plans.Plan, pauses *trace.Pauses, subs bool) (*plans.Plan, *analyze.Stats, *trace.Subtests, error) {
	pkg, test := j.pkg.ImportPath, j.test
	meta := trace.Meta{Version: abi.FormatVersion, Package: pkg, Test: test, Binary: j.pkg.Binary, Sites: j.pkg.Sites}
	if _, err := os.Stat(raw); errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("the test binary wrote no trace to %s (was it built by wafl?)", raw)
	}
	opts := analyze.Options{
		TempDir:     ws.Path("tmp"),
		NoForkOrder: params.NoForkOrder,
		Tool:        "wafl",
		BinaryHash:  j.pkg.hash,
		SlotTypes:   slotTypes(j.pkg.Sites),
		Sites:       siteInfos(j.pkg.Sites),
		Reach:       reachOf(j.pkg.Sites),
		Known:       knownPairs(known),
	}
	p := params.NewParams()
	opts.Params = &p
	var subtests *trace.Subtests
	var err error
	var plan *plans.Plan
	var stats *analyze.Stats
	switch {
	case arrows == "" && !subs:
		plan, stats, err = analyze.Raw(ctx, raw, meta, pauses, opts)
	default:
		// The conversion drops the test boundary marks (a run of one
		// test has them; a package run's split left them out) and the
		// subtest marks.
		plan, stats, subtests, err = convertBeside(ctx, raw, arrows, meta, pauses, subs, opts)
	}
	ie := (*analyze.InternalError)(nil)
	internal := errors.As(err, &ie)
	if arrows == "" && !internal {
		os.Remove(raw) // convertBeside removed it once converted
	}
	if internal {
		// A bug of wafl's: this test gets the report, the trace stays for
		// it, and the other tests go on.
		kept := raw
		if arrows != "" {
			kept = arrows
		}
		return nil, nil, nil, fmt.Errorf("%w\ntrace kept: %s\n%s", err, ws.Rel(kept), testrun.Tail(string(ie.Stack), 40))
	}
	if err != nil {
		return nil, nil, nil, err
	}
	// The package and test come from meta, written into the trace.
	plan.SetBuild(j.pkg.Binary, j.pkg.Sites, j.pkg.hash)
	if stats != nil {
		// One fork row of every trace is the test goroutine adopting
		// TestMain's token (hook.AdoptTests: package init ordered before
		// the test), not a goroutine the test started; a go row without
		// a fork row is a goroutine the test started that never ran.
		plan.SetForks(max(stats.Forks-1, 0) + int64(stats.Unstarted))
		plan.SetStaticLeft(stats.StaticLeft)
	}
	return plan, stats, subtests, nil
}

// convertBeside converts raw into the Arrow trace arrows (with the
// subtest record when subs) while the analysis reads raw itself
// (analyze.Raw gives the plan analyze.File would give of arrows): for a
// large trace, the two take a CPU each rather than one after the other,
// and the preparation of a package whose longest test records millions
// of events ends sooner. It removes raw once it is converted; a spill
// file the conversion failed on stays.
func convertBeside(ctx context.Context, raw, arrows string, meta trace.Meta, pauses *trace.Pauses, subs bool, opts analyze.Options) (*plans.Plan, *analyze.Stats, *trace.Subtests, error) {
	var (
		subtests *trace.Subtests
		cerr     error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if subs {
			_, subtests, cerr = trace.ConvertSubtests(raw, arrows, meta, pauses)
		} else {
			_, cerr = trace.ConvertWithout(raw, arrows, meta, pauses)
		}
	}()
	opts.Trace = arrows
	plan, stats, err := analyze.Raw(ctx, raw, meta, pauses, opts)
	<-done
	if cerr != nil && !errors.Is(cerr, trace.ErrTruncated) {
		return nil, nil, nil, fmt.Errorf("%s: converting the trace: %w", raw, cerr)
	}
	os.Remove(raw)
	return plan, stats, subtests, err
}

// disposedBefore reports whether the spill file raw shows goroutine g's
// last access at site to an object that some goroutine disposed of before
// it in time, with no init in between. What the crash left unflushed is
// not there: then it says no, and the panic's own kind stands.
func disposedBefore(raw string, site uint32, g uint64) bool {
	// Two streaming passes: the access (its object and time), then that
	// object's inits and disposes, whose order is by time (the recorder's
	// buffers are per thread, not in time order in the file).
	var at abi.RawEvent
	found := false
	_ = scanRaw(raw, func(e abi.RawEvent) {
		if e.G == g && e.Site == site && e.Op.Access() && (!found || e.Time >= at.Time) {
			at, found = e, true
		}
	})
	if !found {
		return false
	}
	var lastDispose, lastInit int64 = -1, -1
	_ = scanRaw(raw, func(e abi.RawEvent) {
		if e.Obj != at.Obj || e.Time > at.Time {
			return
		}
		switch e.Op {
		case abi.OpDispose:
			lastDispose = max(lastDispose, e.Time)
		case abi.OpInit:
			lastInit = max(lastInit, e.Time)
		}
	})
	return lastDispose >= 0 && lastDispose >= lastInit
}

// scanRaw calls fn for every record of the spill file raw, up to a cut
// the crash left.
func scanRaw(raw string, fn func(abi.RawEvent)) error {
	f, err := os.Open(raw)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := trace.NewRawReader(bufio.NewReaderSize(f, 1<<20), raw)
	if err != nil {
		return err
	}
	for r.Next() {
		p := r.Payload()
		for i := range r.Len() {
			fn(abi.DecodeRawEvent(p[i*abi.RawRecordSize:]))
		}
	}
	return r.Err()
}

// knownPairs answers analyze.Options.Known for plan (nil: nil).
func knownPairs(plan *plans.Plan) func(first, second uint32) bool {
	if plan == nil {
		return nil
	}
	set := map[[2]uint32]bool{}
	for _, l := range plan.Locations {
		for _, pr := range l.Pairs {
			set[[2]uint32{pr.First, pr.Second}] = true
		}
	}
	return func(first, second uint32) bool { return set[[2]uint32{first, second}] }
}

// failureExcerpt returns the interesting end of a failed run's output.
func failureExcerpt(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return testrun.Tail(string(data), 15)
}

// prepCrash turns a MEMORDER panic of a preparation run at an
// instrumented site into a bug exposed without delay (report.HowPreparation):
// it is added to the summary, so the invocation exits 1, and the test stops
// with an error saying so (it has no plan until a preparation run passes).
// Any other failure gives nil.
func prepCrash(s *session, j job, res testrun.Result, raw, sub, skip string) error {
	out, err := os.ReadFile(res.Output)
	if err != nil {
		return nil
	}
	tab, err := sites.Load(j.pkg.Sites)
	if err != nil {
		return nil
	}
	tr := testrun.Run{Binary: j.pkg.Binary, Test: j.test, Sub: sub, Skip: skip}
	bug, _ := report.PreparationBug(report.PrepCrash{
		Package: j.pkg.ImportPath, Test: j.test, Binary: j.pkg.Binary,
		Args: tr.Args(), Env: []string{abi.Env(abi.EnvMode, abi.ModeRecord)},
		Sites: tab, Output: out,
		Disposed: func(site uint32, g int64) bool { return disposedBefore(raw, site, uint64(g)) },
	})
	if bug == nil {
		return nil
	}
	s.sum.add(func(s *Summary) { s.Bugs = append(s.Bugs, bug) })
	s.prog.Printf("BUG %s in %s.%s (preparation run, no delay): %s\n", bug.Kind, j.pkg.ImportPath, j.test, bug.Panic)
	return &testError{note: "bug exposed without delays",
		err: fmt.Errorf("MEMORDER panic in the delay-free preparation run at %s:%d (%s), reported as a bug; "+
			"the test gets a plan once a preparation run passes; output in %s",
			bug.Failing.File, bug.Failing.Line, bug.Panic, res.Output)}
}
