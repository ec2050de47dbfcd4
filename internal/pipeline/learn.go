package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/plans"
)

// Plans that keep learning (docs/algorithm.md, "Plans that keep
// learning"). A plan made from one preparation run has no candidates when
// the racing goroutine did not run before the test ended (scheduled late,
// or outliving the test); trusting it forever would never test the test
// again. So detect, given a plan without any candidate, runs the test with
// recording instead of delays — a detection run with an empty plan would
// inject nothing anyway — and merges the candidates of its trace into the
// plan. At most learnPerCall such runs per detect call and plans.MaxLearn
// per plan; they do not count against --runs.
//
// A plan with candidates keeps learning too: the first detection run of a
// detect call also records its events (abi.ModeDetectRecord), at most
// plans.MaxDetectRecord runs per plan, and the candidate pairs of its
// trace that the plan does not have join it (plans.AddNew, with the
// plan's δ; at most plans.MaxDetectCandidates a run). The other detection
// runs do not record: their hooks cost what they cost before.

// learnPerCall bounds the recording runs of one detect call for one test.
const learnPerCall = 2

// learn makes recording runs of test j until one yields candidates or the
// budget is spent, merging each run's plan into plan, and returns the
// merged plan (saved) and an account ("" when it made no run).
func learn(ctx context.Context, s *session, o *DetectOptions, j job, plan *plans.Plan) (*plans.Plan, string, error) {
	pkg, test := j.pkg.ImportPath, j.test
	runs, added := 0, 0
	if f := plan.Provenance.Forks; f != nil && *f == 0 {
		// No goroutine was started in the recorded run: there was no
		// late goroutine to miss (a test without goroutines would cost a
		// recording run per detect for nothing).
		return plan, "", nil
	}
	for runs < learnPerCall && plan.Provenance.Learned < plans.MaxLearn && len(plan.Locations) == 0 {
		n := plan.Provenance.Learned + 1
		raw := s.ws.RawTracePath(pkg, test)
		if err := os.MkdirAll(filepath.Dir(raw), 0o755); err != nil {
			return nil, "", err
		}
		os.Remove(raw)
		sub, skip := o.subtestArgs()
		res, err := testrun.Run{
			Sub: sub, Skip: skip, Binary: j.pkg.Binary, Dir: j.pkg.Dir, Test: test,
			Env:     []string{abi.Env(abi.EnvMode, abi.ModeRecord), abi.Env(abi.EnvTrace, raw)},
			Timeout: o.Timeout,
			Output:  s.ws.LogPath(pkg, test, "learn"+strconv.Itoa(n)+".log"),
		}.Start(ctx)
		if err != nil {
			return nil, "", err
		}
		runs++
		plan.CountLearnRun()
		if res.TimedOut || res.ExitCode != 0 {
			// A failing recording run teaches nothing; the detection
			// runs that follow (if any) will show the failure.
			if err := plans.Save(s.ws.PlanPath(pkg, test), plan); err != nil {
				return nil, "", err
			}
			break
		}
		fresh, _, err := analyzeRun(ctx, s.ws, o.Params, j, raw)
		if err != nil {
			return nil, "", &testError{phase: "analyze", note: "analysis failed", err: err}
		}
		// plan has no candidates (the loop's condition): the learning
		// run's analysis parameters (δ and maximum delay scaled for the
		// load now) replace its own.
		merged, k, err := plans.MergeLearned(plan, fresh)
		if err != nil {
			return nil, "", err
		}
		added += k
		plan = merged
		if err := plans.Save(s.ws.PlanPath(pkg, test), plan); err != nil {
			return nil, "", err
		}
	}
	if runs == 0 {
		return plan, "", nil
	}
	s.sum.add(func(s *Summary) {
		s.LearnRuns += runs
		s.Learned += added
		if !plan.Empty() {
			s.WithCandidates++
		}
	})
	return plan, fmt.Sprintf("learned %d candidate pairs in %d recording run(s)", added, runs), nil
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
	arrows := r.base + ".arrows"
	defer os.Remove(raw)
	defer os.Remove(arrows)
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
		fresh, _, err := analyzeTrace(ctx, s.ws, ov, j, raw, arrows, plan)
		if err != nil {
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

// paren is " (s)", or "" for an empty s.
func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
