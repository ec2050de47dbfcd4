package pipeline

import (
	"cmp"
	"slices"

	"github.com/memorder/wafl/plans"
)

// Pairs shared by many tests (docs/algorithm.md, "Pairs shared by many
// tests"). A plan is per test, and so is its decay; but the tests of a
// package often share their candidate pairs — every test that opens and
// closes a database has the pair of its close and of the use it races —
// and each such test would delay the same two sites three runs each. TSVD
// decays a location's probability in the one process that runs the whole
// suite (§3.4.5), so a pair tried in vain by one test is tried less by the
// next. detect does the same per call: before the runs, each candidate
// pair of a package (its kind and two sites, which are the binary's) goes
// to at most --tests-per-pair of the tests whose plans have it live, and a
// test's runs delay only the pairs it was given. A test given none has no
// runs in this call. Rotation comes from the plans themselves: a test whose
// plan has already delayed the pair's location ranks after those that have
// not, so the next detect gives the pair to other tests.

// DefaultTestsPerPair is --tests-per-pair's default.
const DefaultTestsPerPair = 3

// pairKey is a candidate pair of one package's build.
type pairKey struct {
	kind          plans.Kind
	first, second uint32
}

// shares are the pairs each test of a detect call may delay.
type shares struct {
	per int
	// pairs are the live pairs of each test whose plan was read before
	// the runs: true for a pair given to the test, false for one given to
	// others. A test not in it (prepared by detect itself) delays all its
	// pairs, and so does every test for a pair its plan gained during
	// the call (a detection run that recorded).
	pairs map[job]map[pairKey]bool
	// held counts each test's pairs given to others.
	held map[job]int
}

// claim is one test's bid for a pair.
type claim struct {
	j       job
	delays  int  // delays its plan already made at the pair's location
	guessed bool // the pair is static, predicted or mirrored in its plan
	dur     int64
}

// shareOut gives each live candidate pair of the jobs' current plans to at
// most o.TestsPerPair tests of its package: those whose plan delayed its
// location least so far, then those that saw the pair over those that
// guessed it, then the shortest. TestsPerPair < 1, or basic mode, gives
// every test all its pairs (nil).
func shareOut(s *session, o *DetectOptions, jobs []job) *shares {
	if o.TestsPerPair < 1 || o.Basic {
		return nil
	}
	sh := &shares{per: o.TestsPerPair, pairs: map[job]map[pairKey]bool{}, held: map[job]int{}}
	s.sum.add(func(s *Summary) { s.TestsPerPair = o.TestsPerPair })
	for _, js := range byPackage(jobs) {
		bids := map[pairKey][]claim{}
		for _, j := range js {
			plan, err := plans.Load(s.ws.PlanPath(j.pkg.ImportPath, j.test))
			if err != nil || plan.Provenance.BinaryHash != j.pkg.hash || plan.Provenance.Basic || slices.Contains(j.pkg.NoDelay, j.test) {
				continue // detectPlan prepares it again: all its pairs are its own
			}
			sh.pairs[j] = map[pairKey]bool{}
			for _, l := range plan.Locations {
				if !l.Live() {
					continue
				}
				for _, pr := range l.Pairs {
					if pr.Pruned != "" {
						continue
					}
					k := pairKey{pr.Kind, pr.First, pr.Second}
					bids[k] = append(bids[k], claim{j, l.Delays, plans.Guessed(pr.From), plan.Provenance.DurationNs})
				}
			}
		}
		for k, cs := range bids {
			slices.SortFunc(cs, func(a, b claim) int {
				if c := cmp.Compare(a.delays, b.delays); c != 0 {
					return c
				}
				if a.guessed != b.guessed {
					if a.guessed {
						return 1
					}
					return -1
				}
				if c := cmp.Compare(a.dur, b.dur); c != 0 {
					return c
				}
				return cmp.Compare(a.j.test, b.j.test)
			})
			if len(cs) > sh.per {
				s.sum.add(func(s *Summary) { s.SharedPairs++ })
			}
			for i, c := range cs {
				sh.pairs[c.j][k] = i < sh.per
				if i >= sh.per {
					sh.held[c.j]++
				}
			}
		}
	}
	return sh
}

// out reports whether every pair of test j was given to other tests, and
// how many that is.
func (sh *shares) out(j job) (bool, int) {
	if sh == nil || sh.held[j] == 0 {
		return false, 0
	}
	return sh.held[j] == len(sh.pairs[j]), sh.held[j]
}

// view returns the plan test j's next run reads: plan without the pairs
// given to other tests (a copy; plan itself when it has none).
func (sh *shares) view(j job, plan *plans.Plan) *plans.Plan {
	if sh == nil || sh.held[j] == 0 {
		return plan
	}
	mine := sh.pairs[j]
	return plan.Without(func(pr *plans.Pair) bool {
		given, ok := mine[pairKey{pr.Kind, pr.First, pr.Second}]
		return ok && !given
	})
}
