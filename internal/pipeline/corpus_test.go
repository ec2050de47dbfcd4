package pipeline

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestCorpusSubset runs prepare and detect end to end on a few bugs of the
// bundled corpus (examples/) and a fixed twin: every bug must be reported
// with the right kind, the twin never. Exposing a bug depends on
// scheduling, so a bug gets a retry budget of fresh prepare+detect
// attempts; a false report on the twin fails at once.
func TestCorpusSubset(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // test -> kind
		"TestDialExitIdle":                      "use-before-init",   // pickfirst
		"TestShutdownRightAfterStart":           "use-after-dispose", // natsstart
		"TestStatsNoStreamWhileContainerStarts": "use-after-dispose", // dockerstats
	}
	const twin = "./pickfirst/fixed"
	patterns := []string{"./pickfirst", "./natsstart", "./dockerstats", twin}
	const attempts = 3
	found := map[string]string{}
	for attempt := 1; attempt <= attempts && len(found) < len(want); attempt++ {
		o := DetectOptions{
			PrepareOptions: PrepareOptions{
				Common:   Common{Dir: examples, WorkDir: t.TempDir()},
				Packages: Packages{Patterns: patterns},
				Tests:    Tests{Parallel: 2},
			},
			Runs: 2,
		}
		if _, err := Prepare(context.Background(), o.PrepareOptions); err != nil {
			t.Fatalf("prepare: %v", err)
		}
		sum, err := Detect(context.Background(), o)
		if err != nil {
			t.Fatalf("detect: %v", err)
		}
		for _, p := range sum.Problems {
			t.Logf("attempt %d: %s", attempt, p)
		}
		for _, b := range sum.Bugs {
			if strings.HasSuffix(b.Package, "/fixed") {
				t.Fatalf("false report on the fixed twin %s: %s at %s:%d", b.Package, b.Kind, b.Failing.File, b.Failing.Line)
			}
			if k, ok := want[b.Test]; !ok || k != string(b.Kind) {
				t.Errorf("unexpected bug %s in %s.%s", b.Kind, b.Package, b.Test)
				continue
			}
			found[b.Test] = string(b.Kind)
		}
	}
	var missed []string
	for test := range want {
		if _, ok := found[test]; !ok {
			missed = append(missed, test)
		}
	}
	sort.Strings(missed)
	if len(missed) > 0 {
		t.Errorf("not exposed in %d attempts: %s", attempts, strings.Join(missed, ", "))
	}
}
