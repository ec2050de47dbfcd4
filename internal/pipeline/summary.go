package pipeline

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/memorder/wafl/analyze"
	"github.com/memorder/wafl/internal/report"
)

// Problem is a package or test that wafl could not handle, or that failed
// on its own; it is reported and skipped while the rest go on.
type Problem struct {
	Package string
	Test    string // empty for a package-level problem
	Phase   string // "build", "list", "prepare", "analyze", "detect"
	Reason  string
}

func (p Problem) String() string {
	name := p.Package
	if p.Test != "" {
		name += "." + p.Test
	}
	return fmt.Sprintf("%s (%s): %s", name, p.Phase, p.Reason)
}

// Summary is the honest account of one invocation.
type Summary struct {
	mu sync.Mutex

	Packages       int // packages matched
	PackagesBuilt  int
	BuiltFrom      string // where the test binaries came from when not built now (build.Result.From)
	Tests          int    // tests run at least once
	Prepared       int    // tests with a fresh plan
	Reused         int    // tests whose plan from an earlier invocation was current
	FailPlain      int    // tests that fail or hang without delays (no plan)
	Remembered     int    // of FailPlain, known from an earlier run on the same build and not run
	Shard          string // "i/n" when only one shard of the tests ran
	WithCandidates int    // tests whose plan has delay candidates
	Examples       int    // Example functions the patterns select, which wafl does not run
	NoDelay        int    // tests detect left alone for their //wafl:nodelay directive
	Runs           int    // detection runs
	Delays         int    // delays injected
	// Learned are the candidate pairs that recording runs of detect added
	// to plans without candidates (learn.go), in LearnRuns runs.
	Learned, LearnRuns int
	// DetectLearned are the candidate pairs that detection runs which
	// also recorded (DetectRecorded of them) added to plans that had
	// candidates (learn.go, learnFromRun).
	DetectLearned, DetectRecorded int
	// Predicted are the candidate pairs the analyses of this invocation
	// predicted for goroutines that were late in the analyzed run
	// (analyze/predict.go), in PredictedTests tests.
	Predicted, PredictedTests int
	// Static are the static candidate pairs the analyses of this
	// invocation added for goroutines that never ran or stopped short
	// (analyze/static.go), in StaticTests tests; StaticLeft those they
	// ranked below the cap per test and left out.
	Static, StaticTests, StaticLeft int
	// StaticDelays are the delays detection runs injected at locations
	// of static pairs (tried), StaticPlans the plans with static pairs
	// they ran, StaticLeftPlans what those plans left out.
	StaticDelays, StaticPlans, StaticLeftPlans int
	// Beside are the test processes that ran while another test of
	// their package ran (gate.go), of Procs started, at most Peak at
	// once; Alone those of them that failed or hung and ran again alone;
	// NetNS those that ran in a network namespace of their own.
	Beside, Procs, Peak, Alone, NetNS int
	// SharedPairs are the candidate pairs live in more than TestsPerPair
	// tests of their package, each delayed in that many (share.go);
	// SharedOut the tests detect did not delay since each of their pairs
	// went to other tests.
	SharedPairs, SharedOut, TestsPerPair int
	Bugs                                 []*report.Bug
	Problems                             []Problem
	Phases                               []Phase
}

// Phase is the wall time of one phase.
type Phase struct {
	Name     string
	Duration time.Duration
}

func (s *Summary) problem(p Problem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Problems = append(s.Problems, p)
}

func (s *Summary) add(f func(s *Summary)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// phase times fn as the named phase.
func (s *Summary) phase(name string, fn func() error) error {
	start := time.Now()
	err := fn()
	s.add(func(s *Summary) { s.Phases = append(s.Phases, Phase{name, time.Since(start)}) })
	return err
}

// Err is non-nil when nothing could be done at all: every matched package
// failed to build. Individual failures are Problems, not errors.
func (s *Summary) Err() error {
	if s.Packages > 0 && s.PackagesBuilt == 0 {
		return errors.New("no package could be instrumented and built (see above)")
	}
	return nil
}

// Print writes the summary for people.
func (s *Summary) Print(w io.Writer, detect bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintln(w)
	from := ""
	if s.BuiltFrom != "" {
		from = " (binaries from " + s.BuiltFrom + ")"
	}
	fmt.Fprintf(w, "packages: %d matched, %d built%s\n", s.Packages, s.PackagesBuilt, from)
	parts := []string{fmt.Sprintf("%d prepared now", s.Prepared)}
	if detect || s.Reused > 0 {
		parts = append(parts, fmt.Sprintf("%d with a current plan", s.Reused))
	}
	if s.FailPlain > 0 {
		f := fmt.Sprintf("%d fail or hang without delays", s.FailPlain)
		if s.Remembered > 0 {
			f += fmt.Sprintf(" (%d remembered, not run again)", s.Remembered)
		}
		parts = append(parts, f)
	}
	shard := ""
	if s.Shard != "" {
		shard = " (shard " + s.Shard + ")"
	}
	fmt.Fprintf(w, "tests:    %d%s: %s; %d with delay candidates\n", s.Tests, shard, strings.Join(parts, ", "), s.WithCandidates)
	if s.NoDelay > 0 {
		fmt.Fprintf(w, "nodelay:  %s with //wafl:nodelay, recorded and planned but not delayed\n", plural(s.NoDelay, "test", "tests"))
	}
	if s.Examples > 0 {
		fmt.Fprintf(w, "examples: %s not run (wafl runs Test functions; an example's goroutines belong in a test to be checked)\n", plural(s.Examples, "Example function", "Example functions"))
	}
	if s.Predicted > 0 {
		fmt.Fprintf(w, "predicted: %s for goroutines that were late in %s\n",
			plural(s.Predicted, "candidate pair", "candidate pairs"), plural(s.PredictedTests, "test's run", "tests' runs"))
	}
	if s.Static > 0 || s.StaticLeft > 0 {
		fmt.Fprintf(w, "static:   %s for goroutines that never ran or stopped short in %s; %s left out (at most %d a test)\n",
			plural(s.Static, "candidate pair", "candidate pairs"), plural(s.StaticTests, "test's run", "tests' runs"),
			plural(s.StaticLeft, "pair", "pairs"), analyze.MaxStatic)
	}
	if detect {
		fmt.Fprintf(w, "detect:   %s, %s injected, %s found\n", plural(s.Runs, "run", "runs"),
			plural(s.Delays, "delay", "delays"), plural(len(s.Bugs), "bug", "bugs"))
		if s.StaticPlans > 0 {
			fmt.Fprintf(w, "static:   %s tried at static candidate pairs of %s; %s left out of them\n",
				plural(s.StaticDelays, "delay", "delays"), plural(s.StaticPlans, "plan", "plans"),
				plural(s.StaticLeftPlans, "pair", "pairs"))
		}
		if s.SharedPairs > 0 {
			fmt.Fprintf(w, "shared:   %s in more than %d tests of their package, each delayed in %d of them (--tests-per-pair); %s not delayed: all their pairs went to others\n",
				plural(s.SharedPairs, "candidate pair", "candidate pairs"), s.TestsPerPair, s.TestsPerPair, plural(s.SharedOut, "test", "tests"))
		}
		if s.LearnRuns > 0 {
			fmt.Fprintf(w, "learned:  %s from %s of plans without candidates\n",
				plural(s.Learned, "candidate pair", "candidate pairs"), plural(s.LearnRuns, "recording run", "recording runs"))
		}
		if s.DetectRecorded > 0 {
			fmt.Fprintf(w, "learned:  %s from %s that also recorded\n",
				plural(s.DetectLearned, "candidate pair", "candidate pairs"), plural(s.DetectRecorded, "detection run", "detection runs"))
		}
	}
	if s.Beside > 0 {
		netns := ""
		if s.NetNS > 0 {
			netns = fmt.Sprintf(" (%d in a network namespace of their own)", s.NetNS)
		}
		fmt.Fprintf(w, "spread:   %d of %s ran beside another test of their package while CPUs were idle%s, at most %d at once; %s failed there and ran again alone\n",
			s.Beside, plural(s.Procs, "test process", "test processes"), netns, s.Peak, plural(s.Alone, "run", "runs"))
	}
	if len(s.Problems) > 0 {
		probs := append([]Problem(nil), s.Problems...)
		sort.SliceStable(probs, func(i, j int) bool {
			if probs[i].Package != probs[j].Package {
				return probs[i].Package < probs[j].Package
			}
			return probs[i].Test < probs[j].Test
		})
		fmt.Fprintf(w, "skipped or failed: %d\n", len(probs))
		for _, p := range probs {
			fmt.Fprintf(w, "  %s\n", indent(p.String(), "    "))
		}
	}
	if len(s.Phases) > 0 {
		var parts []string
		for _, p := range s.Phases {
			parts = append(parts, fmt.Sprintf("%s %s", p.Name, p.Duration.Round(time.Millisecond)))
		}
		fmt.Fprintf(w, "time:     %s\n", strings.Join(parts, ", "))
	}
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// plural is "1 bug", "2 bugs", "0 bugs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
