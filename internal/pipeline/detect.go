package pipeline

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/internal/pipeline/workdir"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/plans"
)

// Detect runs every selected test that has delay candidates with planned
// delays, until a bug shows or o.Runs runs are used, saving the plan after
// every run, and writes reports for the bugs found.
func Detect(ctx context.Context, o DetectOptions) (*Summary, error) {
	if o.Runs < 1 {
		o.Runs = DefaultRuns
	}
	if !o.SeedSet {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			return nil, err
		}
		o.Seed = binary.LittleEndian.Uint64(b[:]) >> 12 // below 2^52 (abi.MaxSeed)
	}
	if o.Seed > abi.MaxSeed-uint64(o.Runs) {
		return nil, fmt.Errorf("--seed %d: too large; seeds go up to %d (2^53-1) less the number of runs", o.Seed, uint64(abi.MaxSeed))
	}
	var tabs siteTables
	s, err := workflow{
		common:   &o.Common,
		packages: &o.Packages,
		tests:    &o.Tests,
		phase:    "detect",
		spread:   true,
		before: func(ctx context.Context, s *session, jobs []job) {
			s.learning = learnPackages(ctx, s, &o, jobs) // learn.go
			// The tests that learn now are left out: the pairs a plan
			// gains during the call are its own.
			s.shares = shareOut(s, &o, s.learning.others(jobs)) // share.go
		},
		each: func(ctx context.Context, s *session, j job) (int, string, error) {
			return detectTest(ctx, s, &o, &tabs, j)
		},
	}.run(ctx)
	if err != nil {
		return nil, err
	}
	defer s.unlock()
	sum := s.sum
	sort.Slice(sum.Bugs, func(i, k int) bool {
		a, b := sum.Bugs[i], sum.Bugs[k]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		return a.Test < b.Test
	})
	if err := emitReports(&o.Common, o.Reports, s.ws, sum.Bugs); err != nil {
		return nil, err
	}
	sum.Print(o.Stderr, true)
	if sum.Err() == nil {
		fmt.Fprintf(o.Stderr, "seed:     %d (repeat with --seed %d)\n", o.Seed, o.Seed)
		fmt.Fprintln(o.Stderr, plural(len(sum.Bugs), "bug", "bugs")+" found")
	}
	return sum, s.finish(o.Stderr)
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
func detectTest(ctx context.Context, s *session, o *DetectOptions, tabs *siteTables, j job) (int, string, error) {
	at, resumed := s.resumeAt(j) // runs stopped by errBeside go on
	plan, known, learned, err := detectSetup(ctx, s, o, j, at, resumed)
	if err != nil || plan == nil {
		return len(known), learned, err
	}
	tab, err := tabs.get(j.pkg.Sites)
	if err != nil {
		return 0, "", err
	}
	failures := at.failures
	runs := at.k
	unreached := false // the last batch reached no location of its plan
	for k := at.k; k < o.Runs && (o.Basic || !s.shares.view(j, plan).Empty()); {
		// A long test's remaining runs start side by side while CPUs are
		// idle (sideBySide): each run is judged, then all are folded into
		// the plan in order, as if they had run one after another.
		most := 1
		if !resumed { // a test stopped by errBeside goes on alone
			most = sideBySideRuns(o, plan, k)
		}
		specs := make([]runSpec, most)
		for i := range specs {
			n := len(plan.Runs) + 1 + i
			specs[i] = runSpec{n: n, seed: o.Seed + uint64(k+i), base: s.ws.LogPath(j.pkg.ImportPath, j.test, "run"+strconv.Itoa(n))}
			specs[i].record = !o.Basic && recordsRun(plan, k+i) // learn.go
		}
		pairs := livePairs(plan)
		results, errs := runSideBySide(ctx, s, o, j, plan, tab, specs)
		batch := len(results)
		specs = specs[:batch]
		none := true
		discarded := 0 // runs of some subtests that failed: not counted
		for i, r := range specs {
			rr, err := results[i], errs[i]
			if errors.Is(err, errBeside) {
				// The runs after it in the batch do not count either:
				// they go on after this one, run alone.
				s.deferRuns(j, resume{k: k + i, failures: failures, known: known, learned: learned})
				return 0, "", err
			}
			if err != nil {
				return 0, "", err
			}
			if batch > 1 {
				rr.Run.Beside = batch
			}
			if err := foldRun(ctx, s, o, j, plan, tab, r, rr); err != nil {
				return 0, "", err
			}
			if rr.Run.Sub != "" && rr.Known == nil && (rr.Status == report.Fail || rr.Status == report.TimedOut) && plan.RunWholeTestAfterFailure() {
				// A run of only some subtests failed without a bug:
				// the subtests may need one another, so the failure
				// says nothing about the delays. It does not count;
				// the test's runs take the whole test from now on.
				if err := plans.Save(s.ws.PlanPath(j.pkg.ImportPath, j.test), plan); err != nil {
					return 0, "", err
				}
				learned = strings.TrimPrefix(learned+fmt.Sprintf("; run %d took only some subtests (-test.run pattern %q) and failed without a bug (output in %s): the runs take the whole test", r.n, rr.Run.Sub, r.output()), "; ")
				discarded++
				continue
			}
			switch rr.Status {
			case report.BugFound:
				rr.Bug.Runs = k + i + 1
				s.sum.add(func(s *Summary) { s.Bugs = append(s.Bugs, rr.Bug) })
				s.prog.Printf("BUG %s in %s.%s (run %d, seed %d): %s\n", rr.Bug.Kind, j.pkg.ImportPath, j.test, r.n, r.seed, rr.Bug.Panic)
				return 1 + len(known), fmt.Sprintf("%s after %d run(s)%s", rr.Bug.Kind, k+i+1, paren(learned)), nil
			case report.TimedOut:
				return 0, "", &testError{note: "timeout",
					err: fmt.Errorf("run %d timed out (%s%s); output in %s", r.n, rr.Reason, timeoutNote(o.Timeout, plan), r.output())}
			case report.SetupFailed:
				return 0, "", errors.New(rr.Reason)
			case report.Fail:
				if rr.Known == nil { // else the panic is a bug already on record, reached again
					failures = append(failures, fmt.Sprintf("run %d: %s%s (output in %s)", r.n, rr.Reason, lastDelay(rr, tab), r.output()))
				}
			}
			runs++
			none = none && reachedNone(rr)
		}
		k += batch - discarded
		if discarded > 0 {
			continue
		}
		if none && narrowedBatch(results) && plan.RunWholeTest() {
			// Runs of only some subtests reached none of the plan's
			// locations, and none ever did: those subtests do not do
			// alone what they did after the others. The next runs
			// take the whole test.
			if err := plans.Save(s.ws.PlanPath(j.pkg.ImportPath, j.test), plan); err != nil {
				return 0, "", err
			}
			continue
		}
		if !o.Basic && none && livePairs(plan) == pairs {
			// The schedules of these runs never took the test to code
			// its plan delays, and no run added a pair: the next run
			// reads the same plan and most likely does the same.
			unreached = true
			break
		}
	}
	if len(failures) > 0 {
		s.problem(j, "detect", "failed under delays without a MEMORDER panic wafl could attribute (a delay may have broken a timing assumption of the test; --skip leaves it out):\n"+strings.Join(failures, "\n"))
	}
	if sp := partnerSkips(plan, runs); sp > 0 {
		// Which side was delayed: the run logs name each skip (why
		// "partner") and the delay that held the other side.
		learned = strings.TrimPrefix(learned+fmt.Sprintf("; %d delay(s) skipped on the partner's side of a delay in progress", sp), "; ")
	}
	if unreached && runs < o.Runs {
		learned = strings.TrimPrefix(learned+fmt.Sprintf("; stopped after %d of %d runs: none reached a delay location of its plan", runs, o.Runs), "; ")
	} else if runs < o.Runs {
		// Else the loop ends early only when the plan has nothing left
		// to delay.
		learned = strings.TrimPrefix(learned+fmt.Sprintf("; stopped after %d of %d runs: no candidate left (each delayed without exposing a bug until its probability decayed, or pruned)", runs, o.Runs), "; ")
	}
	switch {
	case len(known) > 0:
		return len(known), fmt.Sprintf("%d known bug(s), no new bug", len(known)) + paren(learned), nil
	case runs > 0 && len(failures) == runs:
		return 0, fmt.Sprintf("no MEMORDER bug; failed in every run (%d) under delays, see problems", runs) + paren(learned), nil
	case len(failures) > 0:
		return 0, fmt.Sprintf("no MEMORDER bug; failed in %d of %d runs under delays, see problems", len(failures), runs) + paren(learned), nil
	}
	return 0, "no bug" + paren(learned), nil
}

// reachedNone says whether detection run rr finished having reached none
// of its plan's delay locations: its log's finish record is there, and
// every location it lists saw no instance. A run whose schedule does not
// take the test to the code its plan delays is most likely followed by
// one that does not either (docs/algorithm.md, "Runs that reach no delay
// location").
func reachedNone(rr *report.RunResult) bool {
	lg := rr.Log
	if lg == nil || lg.Finish == nil || len(lg.Locs) == 0 || rr.Run.Delays > 0 {
		return false
	}
	for _, l := range lg.Locs {
		if l.Instances > 0 {
			return false
		}
	}
	return true
}

// narrowedBatch says whether a run of the batch took only some subtests.
func narrowedBatch(results []*report.RunResult) bool {
	for _, rr := range results {
		if rr != nil && rr.Run.Sub != "" {
			return true
		}
	}
	return false
}

// livePairs counts the candidate pairs of plan's live locations.
func livePairs(plan *plans.Plan) int {
	n := 0
	for _, l := range plan.Locations {
		if l.Live() {
			n += len(l.Pairs)
		}
	}
	return n
}

// sideBySide is the shortest preparation run of a test whose detection
// runs may start side by side: for a test that long, its chain of runs
// one after another, each waiting for the plan the one before left, is
// what a package's detection waits for last.
const sideBySide = 300 * time.Millisecond

// sideBySideRuns is how many of test j's detection runs, from run k of
// o.Runs, may run side by side (runSideBySide): one, or, for a test whose
// preparation run took sideBySide or longer, all that are left. Runs side
// by side all read the plan as it is when the first starts: they lose
// what one would have learned from the other (decays, grown delays,
// prunes, and the pairs a recording run adds, which reach the runs after
// them and the test's next detect call), and gain the time of a chain of
// long runs on CPUs left idle.
func sideBySideRuns(o *DetectOptions, plan *plans.Plan, k int) int {
	if o.Basic || plan.Provenance.DurationNs < int64(sideBySide) {
		return 1
	}
	return max(o.Runs-k, 1)
}

// runSideBySide makes the first of specs, and each of the others in turn
// while the first is still running and the gate admits a process beside
// it: at once, and again every half settling time (a run can join late,
// when the CPUs that were busy at the start fall idle). All read plan as
// it is now; a run beside holds its gate slot until it ends. It returns
// the results of the runs it made, those of a prefix of specs, in order,
// once all have ended.
func runSideBySide(ctx context.Context, s *session, o *DetectOptions, j job, plan *plans.Plan, tab *sites.Table, specs []runSpec) ([]*report.RunResult, []error) {
	results := make([]*report.RunResult, len(specs))
	errs := make([]error, len(specs))
	if len(specs) == 1 || !s.gate.admits() {
		results[0], errs[0] = startRun(ctx, s, o, j, plan, tab, specs[0])
		return results[:1], errs[:1]
	}
	var wg sync.WaitGroup
	first := make(chan struct{})
	wg.Go(func() {
		defer close(first)
		results[0], errs[0] = startRun(ctx, s, o, j, plan, tab, specs[0])
	})
	started := 1
	join := func() {
		for range s.gate.tryAcquireN(len(specs) - started) {
			i := started
			started++
			wg.Go(func() {
				defer s.gate.release()
				results[i], errs[i] = startRun(ctx, s, o, j, plan, tab, specs[i])
			})
		}
	}
	join()
	tick := time.NewTicker(s.gate.poll())
	defer tick.Stop()
wait:
	for started < len(specs) {
		select {
		case <-first:
			break wait
		case <-ctx.Done():
			break wait
		case <-tick.C:
			join()
		}
	}
	wg.Wait()
	return results[:started], errs[:started]
}

// detectSetup returns test j's plan for its detection runs, the bugs it
// already has and what learning added; a nil plan means no runs, and
// learned is then the test's account. A test resumed after errBeside
// (at) reloads its plan and keeps the rest from before.
func detectSetup(ctx context.Context, s *session, o *DetectOptions, j job, at resume, resumed bool) (*plans.Plan, []*report.Bug, string, error) {
	if resumed {
		plan, err := plans.Load(s.ws.PlanPath(j.pkg.ImportPath, j.test))
		if err != nil {
			return nil, nil, "", err
		}
		o.Params.ApplyDetection(&plan.Params)
		return plan, at.known, at.learned, nil
	}
	// A test that learns in its package's recording run waits for it,
	// whose account and plan it then has.
	learned, ok := s.learning.wait(j)
	plan, known, err := detectPlan(ctx, s, o, j)
	if err != nil {
		return nil, nil, "", err
	}
	if slices.Contains(j.pkg.NoDelay, j.test) {
		// Recorded and planned; detection leaves it alone.
		s.sum.add(func(s *Summary) { s.NoDelay++ })
		if len(known) > 0 {
			return nil, known, fmt.Sprintf("%d known bug(s); not delayed (//wafl:nodelay)", len(known)), nil
		}
		return nil, nil, "not delayed (//wafl:nodelay)", nil
	}
	if !ok && len(plan.Locations) == 0 && len(known) == 0 && !o.Basic {
		if plan, learned, err = learn(ctx, s, o, j, plan); err != nil {
			return nil, nil, "", err
		}
	}
	if out, n := s.shares.out(j); out && !plan.Empty() {
		s.sum.add(func(s *Summary) { s.SharedOut++ })
		what := fmt.Sprintf("each of its %d candidate pairs is", n)
		if n == 1 {
			what = "its candidate pair is"
		}
		note := fmt.Sprintf("not delayed in this call: %s delayed in %d other tests of the package (--tests-per-pair); a later detect gives it some", what, o.TestsPerPair)
		if len(known) > 0 {
			return nil, known, fmt.Sprintf("%d known bug(s); %s", len(known), note), nil
		}
		return nil, nil, note + paren(learned), nil
	}
	if plan.Empty() && !o.Basic { // basic mode finds its candidates in the runs
		if learned != "" {
			return nil, nil, "no delay candidates (" + learned + ")", nil
		}
		if len(known) > 0 {
			return nil, known, fmt.Sprintf("%d known bug(s), no other delay candidates", len(known)), nil
		}
		return nil, nil, "no delay candidates", nil
	}
	o.Params.ApplyDetection(&plan.Params)
	if len(staticLocations(plan)) > 0 {
		s.sum.add(func(s *Summary) { s.StaticPlans++; s.StaticLeftPlans += plan.Provenance.StaticLeft })
	}
	return plan, known, learned, nil
}

// partnerSkips sums the partner-side skips of the plan's last n runs.
func partnerSkips(p *plans.Plan, n int) int {
	sum := 0
	for _, r := range p.Runs[max(len(p.Runs)-n, 0):] {
		sum += r.SkippedPartner
	}
	return sum
}

// lastDelay names the last delay a failed run injected before it failed,
// where the user can look for the timing assumption it broke.
func lastDelay(rr *report.RunResult, tab *sites.Table) string {
	if rr.Log == nil || len(rr.Log.Delays) == 0 {
		return "; no delay was injected"
	}
	d := rr.Log.Delays[len(rr.Log.Delays)-1]
	where := fmt.Sprintf("site %d", d.Site)
	if st, ok := tab.Lookup(d.Site); ok {
		where = fmt.Sprintf("%s:%d (%s %s)", filepath.Base(st.File), st.Line, st.Kind, st.Expr)
	}
	return fmt.Sprintf("; last delay before it: %v at %s, goroutine %d", time.Duration(d.Ns), where, d.G)
}

// detectPlan returns the plan detection runs of test j use and the bugs it
// already found on this build of the package, which are reported again so
// that rerunning detect does not pass. A test without a plan, with an
// unreadable one or with one made for another build is prepared first.
// Either way the test is counted in the summary.
func detectPlan(ctx context.Context, s *session, o *DetectOptions, j job) (*plans.Plan, []*report.Bug, error) {
	pkg, test := j.pkg.ImportPath, j.test
	planPath := s.ws.PlanPath(pkg, test)
	plan, err := plans.Load(planPath)
	if err != nil || plan.Provenance.BinaryHash != j.pkg.hash || plan.Provenance.Basic != o.Basic {
		if ferr := rememberedFailure(s.ws, j, o.RetryFailing); ferr != nil {
			s.sum.add(func(s *Summary) { s.Tests++; s.FailPlain++; s.Remembered++ })
			return nil, nil, ferr
		}
	}
	// Bugs found on the previous build stay known until the delays that
	// exposed them pass on this one (recheckBugs).
	var stale []*report.Bug
	if err == nil && plan.Provenance.BinaryHash != j.pkg.hash && plan.Provenance.Basic == o.Basic {
		stale = knownBugs(s.ws, plan, pkg, test)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.prog.Printf("%s.%s has no plan yet: preparing it first\n", pkg, test)
	case err != nil:
		s.prog.Printf("%s.%s: unreadable plan (%v): preparing it again\n", pkg, test, err)
	case plan.Provenance.BinaryHash != j.pkg.hash:
		s.prog.Printf("%s.%s: the package changed since its plan was made: preparing it again\n", pkg, test)
	case plan.Provenance.Basic != o.Basic:
		where := "outside"
		if plan.Provenance.Basic {
			where = "in"
		}
		s.prog.Printf("%s.%s: the plan was made %s basic mode (--ablate basic): preparing it again\n", pkg, test, where)
	default:
		known := knownBugs(s.ws, plan, pkg, test)
		for _, b := range known {
			s.prog.Printf("known bug %s in %s.%s (found in run %d, seed %d); delete %s to forget it\n",
				b.Kind, pkg, test, b.Run, b.Seed, planPath)
		}
		s.sum.add(func(s *Summary) {
			s.Tests++
			s.Reused++
			s.Bugs = append(s.Bugs, known...)
			if !plan.Empty() {
				s.WithCandidates++
			}
		})
		return plan, known, nil
	}
	note, err := prepareTest(ctx, s, &o.PrepareOptions, j) // counts the test and its candidates
	if err != nil {
		return nil, nil, notPrepared(err)
	}
	if plan, err = plans.Load(planPath); err != nil {
		return nil, nil, &testError{note: "not prepared: " + note, err: err}
	}
	known, err := recheckBugs(ctx, s, o, j, plan, stale)
	return plan, known, err
}

// recheckTries is how often recheckBugs replays a known bug on a changed
// build before it forgets the bug: a replay repeats the delays, not the
// schedule around them, so one replay of a real bug can pass.
const recheckTries = 3

// recheckBugs replays, on the test's new build, each bug that detection
// found on the previous one: the run that exposed it, with its plan copy
// mapped onto the new sites, its seed and run number (as 'wafl
// reproduce' does), up to recheckTries times. A bug that shows again stays
// known, reported with this build's report and recorded in the new plan;
// one whose replays all pass is forgotten, and the progress output says
// so. A fix therefore turns a detect green only once the delays that
// exposed the bug pass.
func recheckBugs(ctx context.Context, s *session, o *DetectOptions, j job, plan *plans.Plan, bugs []*report.Bug) ([]*report.Bug, error) {
	if len(bugs) == 0 {
		return nil, nil
	}
	pkg, test := j.pkg.ImportPath, j.test
	ro := &ReproduceOptions{Common: o.Common, Runs: 1, Timeout: o.Timeout, Instrument: o.Instrument}
	ro.Stderr = io.Discard
	var known []*report.Bug
	for _, b := range bugs {
		what := fmt.Sprintf("bug %s in %s.%s (found in run %d, seed %d)", b.Kind, pkg, test, b.Run, b.Seed)
		if b.Reproduce.Plan == "" {
			s.prog.Printf("%s has no plan copy to replay (a report of an older wafl): forgotten\n", what)
			continue
		}
		rp, err := newReplay(ro, j.pkg, b)
		if err != nil {
			return nil, fmt.Errorf("replaying %s on the changed build: %w", what, err)
		}
		var (
			base string
			rr   *report.RunResult
			same bool
		)
		for k := 1; k <= recheckTries && !same; k++ {
			base = s.ws.LogPath(pkg, test, fmt.Sprintf("recheck-run%d-%d", b.Run, k))
			if rr, same, err = rp.run(ctx, base); err != nil {
				return nil, fmt.Errorf("replaying %s on the changed build: %w", what, err)
			}
		}
		if !same {
			s.prog.Printf("%s: the delays that exposed it, replayed %d times on the changed build, showed %s: forgotten\n",
				what, recheckTries, rp.verdict(rr, false))
			continue
		}
		if err := saveBundle(s.ws, o.Self, j, base+".plan.json", rp.plan, rp.tab, rr.Bug); err != nil {
			return nil, err
		}
		if pb := rr.PlanOutcome().Bug; pb != nil {
			plan.AddBug(*pb)
		}
		rr.Bug.Runs = b.Runs
		known = append(known, rr.Bug)
		s.prog.Printf("known %s still shows on the changed build (the delays that exposed it, replayed)\n", what)
	}
	if len(known) > 0 {
		if err := plans.Save(s.ws.PlanPath(pkg, test), plan); err != nil {
			return nil, err
		}
		s.sum.add(func(s *Summary) { s.Bugs = append(s.Bugs, known...) })
	}
	return known, nil
}

// notPrepared is err, which stopped the preparation detect needed, as
// detect's runner shows it: a Problem of prepare's phase, with the account
// "not prepared: <prepare's account>".
func notPrepared(err error) error {
	phase, note := classify(err, "prepare")
	return &testError{phase: phase, note: "not prepared: " + note, err: err}
}

// runSpec names one detection run of a test and its files.
type runSpec struct {
	n    int    // run number (WAFL_RUN)
	seed uint64 // WAFL_SEED
	// base is logs/<pkg>/<Test>.run<n>; the run's files add .log (output),
	// .wlog (runtime log), .crash and .plan.json (the plan it read).
	base string
	// record: the run also records its events into base.wraw, and its
	// trace adds candidates to the plan (learn.go, learnFromRun).
	record bool
}

func (r runSpec) output() string { return r.base + ".log" }

// startRun makes detection run r of test j with plan: it runs the test
// binary on a copy of the plan and judges the run (report.Outcome); it
// does not change plan, so that runs side by side can start from the same
// plan (foldRun folds each in).
func startRun(ctx context.Context, s *session, o *DetectOptions, j job, plan *plans.Plan, tab *sites.Table, r runSpec) (*report.RunResult, error) {
	pkg, test := j.pkg.ImportPath, j.test
	logPath, crashPath := r.base+".wlog", r.base+".crash"
	os.Remove(logPath)
	os.Remove(crashPath)
	// The run reads a copy of the plan: the live plan changes after every
	// run, and the copy is what the report's reproduce command needs to
	// repeat this run's decisions.
	runPlan := r.base + ".plan.json"
	if err := os.MkdirAll(filepath.Dir(r.base), 0o755); err != nil {
		return nil, err
	}
	// The copy also carries this run's scheduling slack, from the load
	// right now (plans.RunSlack): the live plan keeps the learned lengths.
	// Pairs given to other tests of the package are not in it (share.go).
	view := s.shares.view(j, plan)
	sub, skip := o.subtestArgs()
	narrowed := ""
	if sub == "" && !o.Basic {
		// Only the subtests the pairs need (subtests.go).
		narrowed = view.SubtestPattern()
		sub = narrowed
	}
	forRun := view.ForRun(loadFactor(), o.Params.NoLoadScale)
	forRun.SetBinaryStamp(j.pkg.runStamp())
	if err := plans.Save(runPlan, forRun); err != nil {
		return nil, err
	}
	env := []string{
		abi.Env(abi.EnvMode, abi.ModeDetect), // ModeDetectRecord below for a recording run
		abi.Env(abi.EnvPlan, runPlan),
		abi.Env(abi.EnvSeed, strconv.FormatUint(r.seed, 10)),
		abi.Env(abi.EnvRun, strconv.Itoa(r.n)),
		abi.Env(abi.EnvLog, logPath),
		abi.Env(abi.EnvCrash, crashPath),
	}
	if o.Ablate != 0 {
		env = append(env, abi.Env(abi.EnvAblate, o.Ablate.String()))
	}
	runEnv, raw := env, ""
	if r.record {
		// The report's reproduce command repeats the run without
		// recording (env).
		raw = r.base + ".wraw"
		os.Remove(raw)
		runEnv = append([]string{abi.Env(abi.EnvMode, abi.ModeDetectRecord), abi.Env(abi.EnvTrace, raw)}, env[1:]...)
	}
	timeout := runTimeout(o.Timeout, forRun)
	if narrowed != "" && !plan.SubtestsPassedAlone() {
		timeout = narrowedTimeout(o.Timeout, forRun)
	}
	tr := testrun.Run{Binary: j.pkg.Binary, Dir: j.pkg.Dir, Test: test, Sub: sub, Skip: skip, Env: runEnv, Timeout: timeout, Output: r.output(), Extra: o.binaryArgs()}
	res, again, err := s.startOnce(ctx, j.pkg, tr)
	if err != nil {
		return nil, err
	}
	if again {
		// The run does not count; the test's runs go on, this one
		// first, when none of its package runs beside it.
		return nil, errBeside
	}
	output, _ := os.ReadFile(res.Output)
	rr, err := report.Outcome(report.RunInput{
		Plan: plan, PlanPath: runPlan, Sites: tab,
		Package: pkg, Test: test, Binary: j.pkg.Binary,
		Args: tr.Args(),
		Env:  env, Run: r.n, Seed: r.seed,
		LogPath: logPath, CrashPath: crashPath, Stderr: output,
		ExitCode: res.ExitCode, Killed: res.TimedOut && res.ExitCode == -1, Duration: res.Duration, CPU: res.CPU,
		// saveBundle replaces it with 'wafl reproduce REPORT'.
		Reproduce: fmt.Sprintf("%s detect --runs 1 --seed %d --run '^%s$' %s", o.Self, r.seed, test, pkg),
	})
	if err != nil {
		return nil, err
	}
	rr.Run.Sub = narrowed
	return rr, nil
}

// foldRun folds detection run r of test j (its result rr, from startRun)
// into plan and saves the plan: the bug's bundle, the run's outcome, what
// a recording run learned.
func foldRun(ctx context.Context, s *session, o *DetectOptions, j job, plan *plans.Plan, tab *sites.Table, r runSpec, rr *report.RunResult) error {
	pkg, test := j.pkg.ImportPath, j.test
	if rr.Status == report.BugFound {
		if err := saveBundle(s.ws, o.Self, j, r.base+".plan.json", plan, tab, rr.Bug); err != nil {
			return err
		}
	}
	plan.ApplyRun(rr.PlanOutcome())
	if err := plans.Save(s.ws.PlanPath(pkg, test), plan); err != nil {
		return err
	}
	if r.record {
		if err := learnFromRun(ctx, s, o, j, plan, r.base+".wraw", r, rr); err != nil {
			return err
		}
	}
	tried := 0
	if static := staticLocations(plan); len(static) > 0 && rr.Log != nil {
		for _, d := range rr.Log.Delays {
			if static[d.Site] {
				tried++
			}
		}
	}
	s.sum.add(func(s *Summary) { s.Runs++; s.Delays += rr.Run.Delays; s.StaticDelays += tried })
	return nil
}

// staticLocations returns the delay locations of plan that have a static
// candidate pair (plans.FromStatic).
func staticLocations(plan *plans.Plan) map[uint32]bool {
	var m map[uint32]bool
	for _, l := range plan.Locations {
		for _, pr := range l.Pairs {
			if pr.From == plans.FromStatic {
				if m == nil {
					m = map[uint32]bool{}
				}
				m[l.Site] = true
			}
		}
	}
	return m
}

// reportBase is the path, without extension, of a test's report files.
func reportBase(ws *workdir.Dir, pkg, test string) string {
	return filepath.Join(ws.ReportDir(), filepath.FromSlash(pkg), test)
}

// knownBugs returns the bugs of the test's report file that the plan
// records as found. A plan's bug and its report are the same bug when they
// come from the same run (run number and seed) with the same kind and
// delayed location: the site that failed is not compared, since the plan
// keys a bug by its pair (a reordered use-before-init's ℓ2, the check of a
// check-then-act) while the report names the frame that panicked.
func knownBugs(ws *workdir.Dir, plan *plans.Plan, pkg, test string) []*report.Bug {
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
			if b.Kind == pb.Kind && b.Delayed.Site == pb.Delayed && b.Run == pb.Run && b.Seed == pb.Seed {
				bugs = append(bugs, b)
				break
			}
		}
	}
	return bugs
}

// emitReports writes each test's bugs as JSON and text under the work
// directory and prints them as the options ask.
func emitReports(c *Common, r Reports, ws *workdir.Dir, bugs []*report.Bug) error {
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
		for _, b := range byTest[k] {
			b.Reproduce.Report = ws.Rel(base + ".json")
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
	return printReports(c, r, ws.Root, bugs)
}

// printReports prints bugs as text (or JSON with --json) to stdout and
// writes SARIF when asked.
func printReports(c *Common, r Reports, root string, bugs []*report.Bug) error {
	if r.JSON {
		if err := report.WriteJSON(c.Stdout, bugs); err != nil {
			return err
		}
	} else if len(bugs) > 0 {
		if err := report.WriteText(c.Stdout, bugs, false); err != nil {
			return err
		}
	}
	if r.SARIF != "" {
		var buf bytes.Buffer
		if err := report.WriteSARIF(&buf, bugs, report.SARIFOptions{ToolVersion: c.Version, Root: root}); err != nil {
			return err
		}
		if err := os.WriteFile(r.SARIF, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--sarif: %w", err)
		}
	}
	return nil
}

// PrintReports prints the given report files, or every report in the work
// directory, and returns the number of bugs.
func PrintReports(o ReportOptions, files []string) (int, error) {
	ws, err := o.workspace()
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		err := filepath.WalkDir(ws.ReportDir(), func(path string, d fs.DirEntry, err error) error {
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
			fmt.Fprintf(o.Stderr, "no reports in %s\n", ws.ReportDir())
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
	if o.HTML != "" {
		if err := writeHTML(o.HTML, bugs); err != nil {
			return 0, err
		}
		fmt.Fprintf(o.Stderr, "wrote %s (%s)\n", o.HTML, plural(len(bugs), "bug", "bugs"))
	}
	return len(bugs), printReports(&o.Common, o.Reports, ws.Root, bugs)
}
