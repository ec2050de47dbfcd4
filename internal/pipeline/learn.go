package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/analyze"
	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/internal/split"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/plans"
)

// Plans that keep learning (docs/algorithm.md, "Plans that keep
// learning"). A plan made from one preparation run has no candidates when
// the racing goroutine did not run before the test ended (scheduled late,
// or outliving the test); trusting it forever would never test the test
// again. So detect, given a plan without any candidate, runs the test with
// recording instead of delays — a detection run with an empty plan would
// inject nothing anyway — and merges the candidates of its trace into the
// plan. At most one such run per detect call and plans.MaxLearn per plan;
// they do not count against --runs.
//
// A plan with candidates keeps learning too: the first detection run of a
// detect call also records its events (abi.ModeDetectRecord), at most
// plans.MaxDetectRecord runs per plan, and the candidate pairs of its
// trace that the plan does not have join it (plans.AddNew, with the
// plan's δ; at most plans.MaxDetectCandidates a run). The other detection
// runs do not record: their hooks cost what they cost before.

// Which plans without candidates learn, and how (the cost of learning):
// a recording run finds new pairs where a goroutine of the recorded run was
// late — it never ran, reached no access before the test ended, or left
// accesses after the test's end that a package run dropped
// (Provenance.Late) —, so such plans (and those of older wafls, which did
// not count them) keep learning, at most one recording run per detect
// call, while the test's preparation run took at most lateLearn. A plan
// whose goroutines were all on time learns once, and only
// when its test is short (cheapLearn): another schedule may still bring
// two accesses within δ, and for a short test a recording run costs
// little more than the process. Either way a detect call's learning costs
// at most about one more preparation run of the tests that learn. The
// tests of a package that learn run in one recording process, as
// prepare's package run (learnPackages), beside the detection runs of the
// tests that have candidates; a test prepared by detect itself learns
// alone (learn).

// cheapLearn is the longest preparation run of a test without late
// goroutines that still gets its one recording run.
const cheapLearn = 100 * time.Millisecond

// maxLearnEvents is the most events a plan's recorded runs may have had
// for it to learn: a stress test that starts a million goroutines
// (chi's TestMuxContextIsThreadSafe: 17M events, a million of its
// goroutines late) costs seconds to record and more to analyze again,
// far beyond "one more preparation run of a short test", and a run that
// found no candidate in that many events is unlikely to find one in the
// next schedule.
const maxLearnEvents = 2_000_000

// lateLearn is the longest preparation run of a test with late goroutines
// that still gets its recording runs. Such a run costs a whole run of the
// test, and in the hunt none of the 14 tests of a second or more that
// learned so gained a candidate pair (ristretto's TTL tests of 9 to 13 s,
// pahomqtt's 5 s backoff test were the critical path of their detect);
// the two that did ran for 3 ms and less.
const lateLearn = 2 * time.Second

// learnable reports whether plan gets a recording run.
func learnable(plan *plans.Plan) bool {
	if len(plan.Locations) > 0 || plan.Provenance.Learned >= plans.MaxLearn || plan.Provenance.Events > maxLearnEvents {
		return false
	}
	if f := plan.Provenance.Forks; f != nil && *f == 0 {
		// No goroutine was started in the recorded run: there was no
		// late goroutine to miss.
		return false
	}
	if l := plan.Provenance.Late; l != nil && *l == 0 {
		// Every goroutine ran and reached its accesses before the test
		// ended: one more schedule, if the test is short.
		d := plan.Provenance.DurationNs
		return plan.Provenance.Learned == 0 && d > 0 && d <= int64(cheapLearn)
	}
	// Late goroutines, or an older wafl's plan that did not count them
	// (its duration 0: unknown).
	return plan.Provenance.DurationNs <= int64(lateLearn)
}

// learn makes one recording run of test j if its plan learns (learnable),
// merges what the run found into plan and returns the merged plan (saved)
// and an account ("" when it made no run).
func learn(ctx context.Context, s *session, o *DetectOptions, j job, plan *plans.Plan) (*plans.Plan, string, error) {
	if !learnable(plan) {
		return plan, "", nil
	}
	pkg, test := j.pkg.ImportPath, j.test
	n := plan.Provenance.Learned + 1
	raw := s.ws.RawTracePath(pkg, test)
	if err := os.MkdirAll(filepath.Dir(raw), 0o755); err != nil {
		return nil, "", err
	}
	os.Remove(raw)
	sub, skip := o.subtestArgs()
	res, err := s.start(ctx, j.pkg, testrun.Run{
		Sub: sub, Skip: skip, Binary: j.pkg.Binary, Dir: j.pkg.Dir, Test: test,
		Env:     []string{abi.Env(abi.EnvMode, abi.ModeRecord), abi.Env(abi.EnvTrace, raw)},
		Timeout: o.Timeout,
		Output:  s.ws.LogPath(pkg, test, "learn"+strconv.Itoa(n)+".log"),
		Extra:   o.binaryArgs(),
	}, raw)
	if err != nil {
		return nil, "", err
	}
	// A failing recording run teaches nothing; the detection runs that
	// follow (if any) will show the failure.
	ok := !res.TimedOut && res.ExitCode == 0
	plan, added, err := learnedFrom(ctx, s, o, j, plan, raw, ok, 0)
	if err != nil {
		return nil, "", err
	}
	if !plan.Empty() {
		// detectPlan counted the test before it learned.
		s.sum.add(func(s *Summary) { s.WithCandidates++ })
	}
	return plan, learnAccount(plan, added, ""), nil
}

// learnedFrom counts a recording run of test j for plan and, when the run
// passed (ok), merges the candidates of its raw trace into plan; dropped
// are the events of the test's goroutines its package run dropped after
// the test's end. It saves and returns the plan and the pairs added.
func learnedFrom(ctx context.Context, s *session, o *DetectOptions, j job, plan *plans.Plan, raw string, ok bool, dropped int64) (*plans.Plan, int, error) {
	pkg, test := j.pkg.ImportPath, j.test
	plan.CountLearnRun()
	added := 0
	if ok {
		fresh, _, err := analyzeFresh(ctx, s.ws, o.Params, j, raw, dropped, 0, "")
		if err != nil {
			return nil, 0, &testError{phase: "analyze", note: "analysis failed", err: err}
		}
		// plan has no candidates (learnable): the learning run's
		// analysis parameters (δ and maximum delay scaled for the load
		// now) replace its own.
		merged, k, err := plans.MergeLearned(plan, fresh)
		if err != nil {
			return nil, 0, err
		}
		plan, added = merged, k
	} else {
		os.Remove(raw)
	}
	if err := plans.Save(s.ws.PlanPath(pkg, test), plan); err != nil {
		return nil, 0, err
	}
	s.sum.add(func(s *Summary) {
		s.LearnRuns++
		s.Learned += added
	})
	return plan, added, nil
}

// learnAccount is the account of a test's recording run.
func learnAccount(plan *plans.Plan, added int, how string) string {
	return fmt.Sprintf("learned %s in a recording run%s", plural(added, "candidate pair", "candidate pairs"), how)
}

// learning is detect's package recording runs (learnPackages), which run
// while the detection runs of the tests with candidates go on: only the
// tests that learn in them wait for them.
type learning struct {
	tests map[job]bool // the tests that learn in a package recording run
	done  chan struct{}
	acc   map[job]string // their accounts, once done; a test without one learns alone
}

// wait waits, for a test that learns in a package recording run, until
// those runs are done, and returns its account; ok is false for any other
// test, and for one whose package's recording run failed.
func (l *learning) wait(j job) (acc string, ok bool) {
	if l == nil || !l.tests[j] {
		return "", false
	}
	<-l.done
	acc, ok = l.acc[j]
	return acc, ok
}

// finish waits until the package recording runs are done.
func (l *learning) finish() {
	if l != nil {
		<-l.done
	}
}

// others are the jobs that do not learn in a package recording run.
func (l *learning) others(js []job) []job {
	var out []job
	for _, j := range js {
		if l == nil || !l.tests[j] {
			out = append(out, j)
		}
	}
	return out
}

// last moves the tests of js that learn in a package recording run after
// the others, keeping each part's order: they wait for those runs, the
// others need not.
func (l *learning) last(js []job) []job {
	if l == nil || len(l.tests) == 0 {
		return js
	}
	out := l.others(js)
	for _, j := range js {
		if l.tests[j] {
			out = append(out, j)
		}
	}
	return out
}

// learnPackages starts the recording runs of the tests among jobs whose
// current plans learn (learnable): one process per package, o.Parallel
// packages at a time, split per test as prepare's package run is; a test
// whose plan is not current (detect prepares it first) learns alone
// later. They run beside detection; learning.wait gives each test its
// account.
func learnPackages(ctx context.Context, s *session, o *DetectOptions, jobs []job) *learning {
	l := &learning{tests: map[job]bool{}, done: make(chan struct{}), acc: map[job]string{}}
	plansOf := map[job]*plans.Plan{}
	for _, j := range jobs {
		if o.Basic || slices.Contains(j.pkg.NoDelay, j.test) {
			continue
		}
		plan, err := plans.Load(s.ws.PlanPath(j.pkg.ImportPath, j.test))
		if err != nil || plan.Provenance.BinaryHash != j.pkg.hash || plan.Provenance.Basic || len(plan.Bugs) > 0 || !learnable(plan) {
			continue
		}
		l.tests[j] = true
		plansOf[j] = plan
	}
	var learn []job
	for _, j := range jobs {
		if l.tests[j] {
			learn = append(learn, j)
		}
	}
	var mu sync.Mutex
	go func() {
		defer close(l.done)
		forEach(ctx, o.Parallel, byPackage(learn), func(js []job) {
			byTest := map[string]*plans.Plan{}
			for _, j := range js {
				byTest[j.test] = plansOf[j]
			}
			chunks := chunk(js, s.gate)
			spread(ctx, s.gate, len(chunks), func(i int) {
				c := chunks[i]
				acc, err := learnPackage(ctx, s, o, c, byTest, chunkName(i, len(chunks)))
				if err != nil {
					if ctx.Err() == nil {
						s.prog.Printf("wafl: %s: the shared recording run of %s failed, each learns alone: %v\n",
							c[0].pkg.ImportPath, plural(len(c), "test", "tests"), err)
					}
					return
				}
				mu.Lock()
				for j, a := range acc {
					l.acc[j] = a
				}
				mu.Unlock()
			})
		})
	}()
	return l
}

// learnPackage runs the tests js of one package in one recording process
// and merges what each test's part of the trace shows into its plan
// (plansOf, by test).
func learnPackage(ctx context.Context, s *session, o *DetectOptions, js []job, plansOf map[string]*plans.Plan, name string) (map[job]string, error) {
	pkg := js[0].pkg
	ip := pkg.ImportPath
	tests := make([]string, len(js))
	for i, j := range js {
		tests[i] = j.test
	}
	raw := s.ws.RawTracePath(ip, name)
	if err := os.MkdirAll(filepath.Dir(raw), 0o755); err != nil {
		return nil, err
	}
	os.Remove(raw)
	defer os.Remove(raw)
	sub, skip := o.subtestArgs()
	res, err := s.start(ctx, pkg, testrun.Run{
		Sub: sub, Skip: skip, Binary: pkg.Binary, Dir: pkg.Dir, Tests: tests,
		Env:     []string{abi.Env(abi.EnvMode, abi.ModeRecord), abi.Env(abi.EnvTrace, raw)},
		Timeout: o.Timeout,
		Output:  s.ws.LogPath(ip, name, "learn.log"),
		Extra:   o.binaryArgs(),
	}, raw)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(raw); err != nil {
		return nil, fmt.Errorf("the test binary wrote no trace (exit status %d); output in %s", res.ExitCode, res.Output)
	}
	st, err := split.Split(raw, tests, func(t string) string { return s.ws.RawTracePath(ip, t) })
	if err != nil {
		return nil, err
	}
	// A test's part counts when it ended and passed and the run's crash,
	// if any, was not on one of its goroutines (as prepare's package run).
	crashed, all := "", false
	if res.ExitCode != 0 && !res.TimedOut {
		if g, creator, ok := crashGoroutine(res.Output); ok {
			if crashed = st.Owner(g); crashed == "" && creator != 0 {
				crashed = st.Owner(creator)
			}
			all = crashed == ""
		}
	}
	ok, kept := map[string]bool{}, 0
	for _, t := range tests {
		ts := st.Tests[t]
		if ok[t] = ts != nil && ts.Ended && !ts.Failed && t != crashed && !all; ok[t] {
			kept++
		}
	}
	logSplit(res.Output, res, st, kept, len(tests), "the others learn nothing from it")
	// A hang or a crash without delays is news even though the test
	// passed in prepare: it shows under some schedules with no help.
	for _, j := range js {
		ts := st.Tests[j.test]
		switch {
		case res.TimedOut && ts != nil && ts.Runs > 0 && !ts.Ended:
			s.problem(j, "learn", fmt.Sprintf("hung without delays in a recording run (the run of its package's tests that learn timed out after %s while it ran; it passed in the preparation run): output in %s",
				res.Duration.Round(time.Second), s.ws.Rel(res.Output)))
		case j.test == crashed:
			s.problem(j, "learn", fmt.Sprintf("crashed without delays in a recording run (it passed in the preparation run): output in %s", s.ws.Rel(res.Output)))
		}
	}
	out := map[job]string{}
	for _, j := range js {
		ts := st.Tests[j.test]
		var dropped int64
		if ts != nil {
			dropped = ts.Late
		}
		plan, added, err := learnedFrom(ctx, s, o, j, plansOf[j.test], s.ws.RawTracePath(ip, j.test), ok[j.test], dropped)
		if err != nil {
			s.problem(j, "analyze", err.Error())
			continue
		}
		how := ""
		if len(js) > 1 {
			how = " shared with " + plural(len(js)-1, "other test", "other tests")
		}
		out[j] = learnAccount(plan, added, how)
	}
	return out, nil
}

// recordsRun reports whether detection run k (0-based, in this detect
// call) of plan also records: the first run, while the plan has recorded
// fewer than plans.MaxDetectRecord runs and its trace had goroutines.
func recordsRun(plan *plans.Plan, k int) bool {
	if k != 0 || plan.Provenance.DetectRecorded >= plans.MaxDetectRecord {
		return false
	}
	f := plan.Provenance.Forks
	return f == nil || *f > 0
}

// learnFromRun folds the trace raw that detection run r (result rr) of
// test j recorded into plan: the pairs plan lacks are added
// (plans.AddNew) and counted, and the plan is saved. A run that exposed
// a bug or did not finish teaches nothing.
func learnFromRun(ctx context.Context, s *session, o *DetectOptions, j job, plan *plans.Plan, raw string, r runSpec, rr *report.RunResult) error {
	pkg, test := j.pkg.ImportPath, j.test
	kept := false // a trace wafl failed to analyze stays for the report
	defer func() {
		if !kept {
			os.Remove(raw)
		}
	}()
	plan.CountDetectRecord()
	added := 0
	if rr.Status == report.Pass || rr.Status == report.Fail {
		if _, err := os.Stat(raw); err != nil {
			return &testError{phase: "analyze", note: "no trace from a recording detection run", err: err}
		}
		// The plan's analysis parameters, so that the new pairs'
		// windows and delays are those of the pairs it has.
		ov := plans.Overrides{
			NearMiss:    time.Duration(plan.Params.NearMissNs),
			MinDelay:    time.Duration(plan.Params.MinDelayNs),
			MaxDelay:    time.Duration(plan.Params.MaxDelayNs),
			Alpha:       plan.Params.Alpha,
			NoLoadScale: true,
			NoForkOrder: o.Params.NoForkOrder,
		}
		// The run's own delays are taken out of the trace's times: a gap
		// they stretched would give the new pair a delay as long as
		// theirs, and the next run's delays would grow on it.
		// The trace is read once: analyzed as it is, without an Arrow
		// file.
		fresh, _, _, err := analyzeTrace(ctx, s.ws, ov, j, raw, "", plan, runPauses(rr.Log), false)
		if err != nil {
			kept = errors.As(err, new(*analyze.InternalError))
			return &testError{phase: "analyze", note: "analysis of a recording detection run failed", err: err}
		}
		added = plan.AddDetected(fresh)
	}
	if err := plans.Save(s.ws.PlanPath(pkg, test), plan); err != nil {
		return err
	}
	s.sum.add(func(s *Summary) {
		s.DetectRecorded++
		s.DetectLearned += added
	})
	return nil
}

// runPauses are the delays and awaits of a detection run's log on the
// runtime's monotonic clock, the time base of the trace the run recorded:
// nil for a log without its setup's mono_ns.
func runPauses(l *report.Log) *trace.Pauses {
	if l == nil || l.Setup == nil || l.Setup.MonoNs == 0 {
		return nil
	}
	base := l.Setup.MonoNs
	iv := make([][2]int64, 0, len(l.Delays)+len(l.Awaits))
	for _, d := range l.Delays {
		end := d.Start + d.Ns
		if d.Ended {
			end = d.End
		}
		iv = append(iv, [2]int64{base + d.Start, base + end})
	}
	for _, a := range l.Awaits {
		iv = append(iv, [2]int64{base + a.T - a.Ns, base + a.T})
	}
	return trace.NewPauses(iv)
}

// paren is " (s)", or "" for an empty s.
func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
