package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/memorder/wafl/analyze"
	"github.com/memorder/wafl/instrument"
	"github.com/memorder/wafl/plans"
	"github.com/memorder/wafl/record/trace"
)

// pkgBuild is one package's instrumented test binary and its tests.
type pkgBuild struct {
	*instrument.Package
	hash  string   // "sha256:<hex>" of the binary
	tests []string // tests selected by --run/--skip
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

// Instrument builds the instrumented test binaries and prints where they
// went.
func Instrument(ctx context.Context, o Options) (*Summary, error) {
	ws, err := o.setup()
	if err != nil {
		return nil, err
	}
	sum := new(Summary)
	pkgs, err := build(ctx, &o, ws, sum, false)
	if err != nil {
		return nil, err
	}
	for _, p := range pkgs {
		fmt.Fprintf(o.Stdout, "%s\n\tbinary: %s\n\tsites:  %s (%d sites in %d files)\n",
			p.ImportPath, p.Binary, p.Sites, p.NumSites, p.Files)
	}
	printProblems(o.Stderr, sum)
	return sum, nil
}

// build instruments and builds the matched packages; packages that fail
// are recorded as problems. With list set it also lists each package's
// tests.
func build(ctx context.Context, o *Options, ws *workspace, sum *Summary, list bool) ([]*pkgBuild, error) {
	var res *instrument.Result
	err := sum.phase("build", func() error {
		var log io.Writer = io.Discard
		if o.Verbose {
			log = o.Stderr
		}
		var err error
		res, err = instrument.Build(ctx, instrument.Config{
			Dir:      ws.dir,
			WorkDir:  ws.work,
			Patterns: o.Patterns,
			Tags:     o.Tags,
			Log:      log,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	var built []*pkgBuild
	for _, p := range res.Packages {
		if errors.Is(p.Err, instrument.ErrNoTestFiles) {
			continue // nothing to test
		}
		sum.Packages++
		if p.Err != nil {
			sum.problem(Problem{Package: p.ImportPath, Phase: "build", Reason: p.Err.Error()})
			continue
		}
		sum.PackagesBuilt++
		pb := &pkgBuild{Package: p}
		if pb.hash, err = analyze.HashFile(p.Binary); err != nil {
			sum.problem(Problem{Package: p.ImportPath, Phase: "build", Reason: err.Error()})
			continue
		}
		built = append(built, pb)
	}
	if len(res.Packages) == 0 {
		return nil, fmt.Errorf("no packages match %v", o.Patterns)
	}
	if !list {
		return built, nil
	}
	err = sum.phase("list", func() error {
		for _, p := range built {
			tests, err := listTests(ctx, p.Binary, p.Dir, o.Run, o.Skip)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				sum.problem(Problem{Package: p.ImportPath, Phase: "list", Reason: err.Error()})
				continue
			}
			p.tests = tests
		}
		return nil
	})
	return built, err
}

// Prepare instruments and builds the packages, runs each test once
// delay-free with recording, and analyzes each trace into a plan.
func Prepare(ctx context.Context, o Options) (*Summary, error) {
	ws, err := o.setup()
	if err != nil {
		return nil, err
	}
	sum := new(Summary)
	pkgs, err := build(ctx, &o, ws, sum, true)
	if err != nil {
		return nil, err
	}
	jobs := jobsOf(pkgs)
	prog := newProgress(o.Stderr)
	err = sum.phase("prepare", func() error {
		prog.Begin("prepare", len(jobs))
		return forEach(ctx, o.Parallel, jobs, func(j job) {
			msg := prepareTest(ctx, &o, ws, sum, j)
			prog.Done(0, "%s.%s: %s", j.pkg.ImportPath, j.test, msg)
		})
	})
	prog.Close()
	if err != nil {
		return nil, err
	}
	sum.Print(o.Stderr, false)
	return sum, nil
}

// prepareTest runs one test with recording and analyzes its trace. It
// returns a one-line account.
func prepareTest(ctx context.Context, o *Options, ws *workspace, sum *Summary, j job) string {
	pkg, test := j.pkg.ImportPath, j.test
	raw := ws.rawTracePath(pkg, test)
	if err := os.MkdirAll(filepath.Dir(raw), 0o755); err != nil {
		sum.problem(Problem{pkg, test, "prepare", err.Error()})
		return "error"
	}
	os.Remove(raw)
	sub, skip := o.subtestArgs()
	res, err := testRun{
		Sub:     sub,
		Skip:    skip,
		Binary:  j.pkg.Binary,
		Dir:     j.pkg.Dir,
		Test:    test,
		Env:     []string{"WAFL_MODE=record", "WAFL_TRACE=" + raw},
		Timeout: o.Timeout,
		Output:  ws.logPath(pkg, test, "prepare.log"),
	}.run(ctx)
	if err != nil {
		sum.problem(Problem{pkg, test, "prepare", err.Error()})
		return "error"
	}
	sum.add(func(s *Summary) { s.Tests++ })
	switch {
	case res.TimedOut:
		sum.problem(Problem{pkg, test, "prepare", fmt.Sprintf("timed out after %s without delays; output in %s", o.Timeout, res.Output)})
		return "timeout"
	case res.ExitCode != 0:
		sum.problem(Problem{pkg, test, "prepare", fmt.Sprintf("fails without delays (exit status %d); output in %s\n%s",
			res.ExitCode, res.Output, failureExcerpt(res.Output))})
		return "fails without delays"
	}
	plan, stats, err := analyzeRun(ctx, o, ws, j, raw)
	if err != nil {
		sum.problem(Problem{pkg, test, "analyze", err.Error()})
		return "analysis failed"
	}
	for _, w := range stats.Warnings {
		sum.problem(Problem{pkg, test, "analyze", "warning: " + w})
	}
	sum.add(func(s *Summary) {
		s.Prepared++
		if !plan.Empty() {
			s.WithCandidates++
		}
	})
	return fmt.Sprintf("%d events, %d candidate pairs at %d locations (%s)",
		stats.Events, stats.Candidates, stats.Locations, res.Duration.Round(time.Millisecond))
}

// analyzeRun converts a raw trace to Arrow, analyzes it and saves the plan.
func analyzeRun(ctx context.Context, o *Options, ws *workspace, j job, raw string) (*plans.Plan, *analyze.Stats, error) {
	pkg, test := j.pkg.ImportPath, j.test
	arrows := ws.tracePath(pkg, test)
	meta := trace.Meta{Version: trace.SchemaVersion, Package: pkg, Test: test, Binary: j.pkg.Binary, Sites: j.pkg.Sites}
	if _, err := os.Stat(raw); errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("the test binary wrote no trace to %s (was it built by wafl?)", raw)
	}
	if _, err := trace.Convert(raw, arrows, meta); err != nil && !errors.Is(err, trace.ErrTruncated) {
		return nil, nil, fmt.Errorf("converting trace %s: %v", raw, err)
	}
	os.Remove(raw)
	p := o.params()
	plan, stats, err := analyze.File(ctx, arrows, analyze.Options{
		Params:     &p,
		TempDir:    ws.path("tmp"),
		Tool:       "wafl",
		BinaryHash: j.pkg.hash,
	})
	if err != nil {
		return nil, nil, err
	}
	plan.Provenance.Package = pkg
	plan.Provenance.Test = test
	plan.Provenance.Binary = j.pkg.Binary
	plan.Provenance.Sites = j.pkg.Sites
	plan.Provenance.BinaryHash = j.pkg.hash
	if err := os.MkdirAll(filepath.Dir(ws.planPath(pkg, test)), 0o755); err != nil {
		return nil, nil, err
	}
	if err := plans.Save(ws.planPath(pkg, test), plan); err != nil {
		return nil, nil, err
	}
	return plan, stats, nil
}

// forEach runs fn over jobs with n workers, stopping early when ctx ends.
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

// failureExcerpt returns the interesting end of a failed run's output.
func failureExcerpt(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return tail(string(data), 15)
}

func printProblems(w io.Writer, sum *Summary) {
	probs := append([]Problem(nil), sum.Problems...)
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Package < probs[j].Package })
	for _, p := range probs {
		fmt.Fprintf(w, "wafl: %s\n", indent(p.String(), "\t"))
	}
}
