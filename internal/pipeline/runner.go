package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memorder/wafl/abi"

	ibuild "github.com/memorder/wafl/internal/build"
	"github.com/memorder/wafl/internal/pipeline/progress"
	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/internal/pipeline/workdir"
)

// pkgBuild is one package's instrumented test binary and its tests.
type pkgBuild struct {
	*ibuild.Package
	hash string // "sha256:<hex>" of the binary
	// stamp is the binary's file stamp right after the build step hashed
	// it (ok false: none); runStamp gives it to detection runs.
	stamp   abi.Stamp
	stamped bool
	tests   []string // tests selected by --run/--skip
	procs   pkgProcs // its test processes running now (session.start)
}

// runStamp is the stamp a detection run's plan copy carries for the
// runtime (plans.Provenance.BinaryStamp): the binary's stamp when the
// build step hashed it, if the binary still has it and it has settled
// (abi.Stamp.Settled); nil otherwise, and the runtime hashes the binary.
func (p *pkgBuild) runStamp() *abi.Stamp {
	if !p.stamped {
		return nil
	}
	now, ok := abi.StampOf(p.Binary)
	if !ok || now != p.stamp || !now.Settled(time.Now().UnixNano()) {
		return nil
	}
	return &now
}

// job is one test of one package.
type job struct {
	pkg  *pkgBuild
	test string
}

// jobsOf lists every selected test of every package.
func jobsOf(pkgs []*pkgBuild) []job {
	var jobs []job
	for _, p := range pkgs {
		for _, t := range p.tests {
			jobs = append(jobs, job{p, t})
		}
	}
	return jobs
}

// workflow is what the runner needs to know of a workflow that builds
// packages.
type workflow struct {
	common   *Common
	packages *Packages
	// tests selects the tests and how they run; nil: build only.
	tests *Tests
	phase string   // the per-test phase ("prepare", "detect")
	each  testFunc // runs one test
	// before, if set, runs in the phase before the tests, on all of them
	// (prepare's package runs, pkgprep.go).
	before func(ctx context.Context, s *session, jobs []job)
	// spread lets the tests of a package run side by side while CPUs are
	// idle (gate.go); each test's runs go through session.start.
	spread bool
}

// testFunc runs one test of a workflow. It returns the number of bugs it
// found and a one-line account for the progress output, or an error for
// what stopped the test, which the runner records as a Problem (see
// testError).
type testFunc func(ctx context.Context, s *session, j job) (bugs int, note string, err error)

// session is one run of a workflow: what its per-test function works with.
type session struct {
	ws   *workdir.Dir
	sum  *Summary
	prog *progress.Bar
	pkgs []*pkgBuild
	// unlock releases the work directory's lock (lockWork); the workflow
	// calls it when it has written everything.
	unlock func()
	// interrupted says how far the tests got when the context ended.
	interrupted string
	// pkgRuns are prepare's package runs by import path (pkgprep.go).
	pkgRuns map[string]*pkgRun
	// learning are detect's package recording runs (learn.go).
	learning *learning
	// shares are the candidate pairs each test of detect delays
	// (share.go); nil: all of its own.
	shares *shares
	// gate admits test processes beyond the workers' (gate.go).
	gate *gate
	// netns gives a test process that starts beside another of its
	// package a network namespace of its own (session.track).
	netns bool
	mu    sync.Mutex
	// resumes are where the detection runs of tests stopped by errBeside
	// go on (gate.go).
	resumes map[job]resume
}

// run is the runner: it resolves the workspace, instruments and builds the
// packages and, unless w.tests is nil, lists each package's selected tests
// and runs w.each on every test with w.tests.Parallel workers, as the
// timed phase w.phase under a progress line. It returns an error only when
// nothing could be done or ctx ended; a package or test that failed is a
// Problem in the summary.
func (w workflow) run(ctx context.Context) (*session, error) {
	ws, err := w.common.workspace()
	if err != nil {
		return nil, err
	}
	unlock, err := ws.Lock()
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			unlock()
		}
	}()
	w.packages.defaults()
	if w.tests != nil {
		w.tests.defaults()
	}
	s := &session{ws: ws, sum: new(Summary), unlock: unlock}
	if w.tests != nil {
		s.gate = newGate(w.tests.Parallel, w.tests.Procs)
		if s.gate.admits() && !w.tests.HostNetwork {
			ok, err := testrun.NetNSAvailable()
			s.netns = ok
			if !ok && w.common.Verbose {
				fmt.Fprintf(w.common.Stderr, "wafl: test processes beside others share the host's network: %v\n", err)
			}
		}
	}
	if s.pkgs, err = build(ctx, w.common, w.packages, w.tests, ws, s.sum); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w while building the test binaries; nothing was run", ErrInterrupted)
		}
		return nil, err
	}
	if w.tests == nil {
		ok = true
		return s, nil
	}
	all := jobsOf(s.pkgs)
	if len(all) == 0 && len(s.sum.Problems) == 0 {
		return nil, noTests(w.packages, w.tests, len(s.pkgs))
	}
	jobs := w.tests.Shard.pick(all)
	if w.tests.Shard.N > 1 {
		s.sum.Shard = w.tests.Shard.String()
	}
	s.prog = progress.New(w.common.Stderr)
	var done atomic.Int64
	err = s.sum.phase(w.phase, func() error {
		if w.before != nil {
			w.before(ctx, s, jobs)
		}
		s.prog.Begin(w.phase, len(jobs))
		// One package's tests run one after another, as go test runs
		// them: tests of a package may share fixed ports and files;
		// packages run Parallel at a time. With spread, more of a
		// package's tests start beside them while CPUs are idle, and a
		// run that fails beside another runs again alone (gate.go).
		defer s.learning.finish() // the summary counts its runs
		return forEach(ctx, w.tests.Parallel, byPackage(jobs), func(js []job) {
			var (
				mu   sync.Mutex
				tail []job // tests stopped by errBeside
			)
			each := func(j job) {
				if ctx.Err() != nil {
					return
				}
				bugs, note, err := w.each(ctx, s, j)
				if err != nil && ctx.Err() != nil {
					return // interrupted: the test did not finish
				}
				if errors.Is(err, errBeside) {
					mu.Lock()
					tail = append(tail, j)
					mu.Unlock()
					return
				}
				done.Add(1)
				if err != nil {
					var phase string
					phase, note = classify(err, w.phase)
					s.problem(j, phase, err.Error())
					bugs = 0
				}
				s.prog.Done(bugs, "%s.%s: %s", j.pkg.ImportPath, j.test, note)
			}
			if w.spread {
				js := s.learning.last(longestFirst(s, js))
				spread(ctx, s.gate, len(js), func(i int) { each(js[i]) })
				// With the package's other tests done, nothing runs
				// beside these.
				for len(tail) > 0 {
					js := tail
					tail = nil
					for _, j := range js {
						each(j)
					}
				}
				return
			}
			for _, j := range js {
				each(j)
			}
		})
	})
	s.prog.Close()
	if err != nil && ctx.Err() != nil {
		// Interrupted (SIGINT): the caller prints what was done, keeps
		// what was written, and returns ErrInterrupted.
		s.interrupted = fmt.Sprintf("interrupted after %d of %d tests; plans and reports of the finished ones are kept", done.Load(), len(jobs))
		err = nil
	}
	if err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// noTests says why a selection that built without a problem has no test
// to run: a pattern that matched no package, packages without tests, or a
// --run/--skip that matches none of their tests.
func noTests(p *Packages, t *Tests, built int) error {
	pat := strings.Join(p.Patterns, " ")
	switch {
	case built == 0:
		return fmt.Errorf("%s: matched no package with tests", pat)
	case t.Run != "" || t.Skip != "":
		return fmt.Errorf("%s: no test matches --run %q --skip %q", pat, t.Run, t.Skip)
	}
	return fmt.Errorf("%s: the packages have no Test functions", pat)
}

// ErrInterrupted is returned by a workflow stopped by its context (SIGINT)
// after it printed what it had done.
var ErrInterrupted = errors.New("interrupted")

// finish prints why the workflow stopped early, if it did, and returns
// ErrInterrupted then.
func (s *session) finish(w io.Writer) error {
	if s.interrupted == "" {
		return nil
	}
	fmt.Fprintln(w, s.interrupted)
	return ErrInterrupted
}

// problem records a Problem of test j.
func (s *session) problem(j job, phase, reason string) {
	s.sum.problem(Problem{Package: j.pkg.ImportPath, Test: j.test, Phase: phase, Reason: reason})
}

// testError is an error that stopped a test, with how the runner shows
// it: as a Problem of phase (default: the workflow's) and with note as
// the test's progress account (default "error").
type testError struct {
	phase string
	note  string
	err   error
}

func (e *testError) Error() string { return e.err.Error() }
func (e *testError) Unwrap() error { return e.err }

// classify returns the phase and the progress account of an error that
// stopped a test of a workflow whose phase is phase.
func classify(err error, phase string) (string, string) {
	note := "error"
	var te *testError
	if errors.As(err, &te) {
		if te.phase != "" {
			phase = te.phase
		}
		if te.note != "" {
			note = te.note
		}
	}
	return phase, note
}

// build instruments and builds the matched packages; packages that fail
// are recorded as problems. With tests set it also lists each package's
// tests that tests selects.
func build(ctx context.Context, c *Common, pk *Packages, tests *Tests, ws *workdir.Dir, sum *Summary) ([]*pkgBuild, error) {
	var log io.Writer = io.Discard
	if c.Verbose {
		log = c.Stderr
	}
	cfg := ibuild.Config{
		Dir:        ws.Run,
		WorkDir:    ws.Work,
		Patterns:   pk.Patterns,
		Tags:       pk.Tags,
		Instrument: pk.Instrument,
		Log:        log,
	}
	var (
		res    *ibuild.Result
		hashes map[string]string
	)
	err := sum.phase("build", func() error {
		var err error
		res, hashes, err = ibuild.Cached(ctx, cfg, ws, log)
		return err
	})
	if err != nil {
		return nil, err
	}
	sum.BuiltFrom = res.From
	var built []*pkgBuild
	for _, p := range res.Packages {
		if errors.Is(p.Err, ibuild.ErrNoTestFiles) {
			continue // nothing to test
		}
		sum.Packages++
		if p.Err != nil {
			sum.problem(Problem{Package: p.ImportPath, Phase: "build", Reason: p.Err.Error()})
			continue
		}
		sum.PackagesBuilt++
		pb := &pkgBuild{Package: p, hash: hashes[p.ImportPath]}
		pb.stamp, pb.stamped = abi.StampOf(p.Binary)
		built = append(built, pb)
	}
	if len(res.Packages) == 0 {
		return nil, fmt.Errorf("no packages match %v", pk.Patterns)
	}
	if tests == nil {
		return built, nil
	}
	err = sum.phase("list", func() error {
		for _, p := range built {
			names, examples, err := testrun.List(ctx, p.Binary, p.hash, p.Dir, tests.Run, tests.Skip)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				sum.problem(Problem{Package: p.ImportPath, Phase: "list", Reason: err.Error()})
				continue
			}
			p.tests = names
			sum.add(func(s *Summary) { s.Examples += examples })
		}
		return nil
	})
	return built, err
}

// forEach runs fn over jobs with n workers, stopping early when ctx ends.
// byPackage groups jobs by package, in the order packages first appear,
// largest group first so that the longest package starts early.
func byPackage(jobs []job) [][]job {
	var groups [][]job
	at := map[string]int{}
	for _, j := range jobs {
		i, ok := at[j.pkg.ImportPath]
		if !ok {
			i = len(groups)
			at[j.pkg.ImportPath] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], j)
	}
	sort.SliceStable(groups, func(a, b int) bool { return len(groups[a]) > len(groups[b]) })
	return groups
}

func forEach[T any](ctx context.Context, n int, jobs []T, fn func(T)) error {
	ch := make(chan T)
	var wg sync.WaitGroup
	for range min(n, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				fn(j)
			}
		}()
	}
	for _, j := range jobs {
		select {
		case ch <- j:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(ch)
	wg.Wait()
	return ctx.Err()
}

// Instrument builds the instrumented test binaries and prints where they
// went: the runner without tests.
func Instrument(ctx context.Context, o InstrumentOptions) (*Summary, error) {
	s, err := workflow{common: &o.Common, packages: &o.Packages}.run(ctx)
	if err != nil {
		return nil, err
	}
	defer s.unlock()
	for _, p := range s.pkgs {
		fmt.Fprintf(o.Stdout, "%s\n\tbinary: %s\n\tsites:  %s (%d sites in %d files)\n",
			p.ImportPath, p.Binary, p.Sites, p.NumSites, p.Files)
	}
	printProblems(o.Stderr, s.sum)
	return s.sum, nil
}

func printProblems(w io.Writer, sum *Summary) {
	probs := append([]Problem(nil), sum.Problems...)
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Package < probs[j].Package })
	for _, p := range probs {
		fmt.Fprintf(w, "wafl: %s\n", indent(p.String(), "\t"))
	}
}
