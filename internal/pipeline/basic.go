package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/memorder/wafl/plans"
)

// Basic mode (--ablate basic; docs/algorithm.md, "Basic mode"): the
// thesis's WAFLBASIC (§3), the "no preparation run" row of Table 6.4.
// prepare runs nothing: each test gets an empty plan marked basic. detect
// runs the tests with WAFL_ABLATE=basic; the runtime finds near misses
// online and delays them in the same run (inject/online.go), and the pairs
// it found join the plan after each run (plans.Plan.ApplyRun), so that
// later runs and later detect calls start from them (TSVD's trap file).
// Such a plan is never relearned and runs even while it has no candidates.

// basicPlan writes test j's empty basic-mode plan.
func basicPlan(s *session, o *PrepareOptions, j job) (string, error) {
	pkg, test := j.pkg.ImportPath, j.test
	params := o.Params
	params.LoadFactor = loadFactor() // δ and the maximum delay for the load now
	plan := &plans.Plan{
		Version: plans.Version,
		Params:  params.NewParams(),
		Provenance: plans.Provenance{
			Package: pkg, Test: test, Binary: j.pkg.Binary, Sites: j.pkg.Sites, BinaryHash: j.pkg.hash,
			Created: time.Now().UTC().Format(time.RFC3339), Tool: "wafl", Basic: true,
		},
	}
	path := s.ws.PlanPath(pkg, test)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := plans.Save(path, plan); err != nil {
		return "", err
	}
	s.sum.add(func(s *Summary) { s.Tests++; s.Prepared++ })
	return fmt.Sprintf("basic mode: no preparation run (δ %s)", time.Duration(plan.Params.NearMissNs)), nil
}
