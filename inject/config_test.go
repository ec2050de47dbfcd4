package inject

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

// TestConfigLeavesNoEnvironmentToChildren: a test that re-runs its own
// binary must not start a second detection run with this run's plan, seed,
// log and crash file. (WAFL_MODE is package hook's, which unsets it.)
func TestConfigLeavesNoEnvironmentToChildren(t *testing.T) {
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	p := &plans.Plan{Version: plans.Version, Params: plans.DefaultParams()}
	if err := plans.Save(planPath, p); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		abi.EnvPlan: planPath, abi.EnvSeed: "7", abi.EnvRun: "1",
		abi.EnvLog: filepath.Join(dir, "log"), abi.EnvCrash: filepath.Join(dir, "crash"), abi.EnvAblate: "hb",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	c, err := configFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if c.seed != 7 || c.planPath != planPath {
		t.Errorf("config = seed %d plan %s", c.seed, c.planPath)
	}
	for k := range env {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("%s=%s is still in the environment", k, v)
		}
	}
}
