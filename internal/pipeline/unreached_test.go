package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorder/wafl/plans"
)

// unreachedSrc has two tests with the candidate pair of pairSrc. TestOnce
// reaches it only the first time it runs (the preparation run), TestAlways
// every time.
const unreachedSrc = `package unreached

import (
	"os"
	"testing"
	"time"
)
` + pairSrc + `
func TestOnce(t *testing.T) {
	if _, err := os.Stat("ran"); err == nil {
		return
	}
	os.WriteFile("ran", nil, 0o644)
	pair()
}

func TestAlways(t *testing.T) { pair() }
`

// TestDetectStopsWhenNoLocationIsReached: a detection run that reached
// none of its plan's delay locations, and added no pair, ends the test's
// runs with an account that says so; a test that reaches them goes on.
func TestDetectStopsWhenNoLocationIsReached(t *testing.T) {
	o, _ := preparedModule(t, "unreached", unreachedSrc, 2)
	o.Runs = 3
	var out strings.Builder
	o.Stderr = &out
	sum, err := Detect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Problems) != 0 {
		t.Fatalf("problems %v\n%s", sum.Problems, out.String())
	}
	runs := map[string]int{}
	for _, name := range []string{"TestOnce", "TestAlways"} {
		p, err := plans.Load(filepath.Join(o.WorkDir, "plans", "example.com", "unreached", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		runs[name] = len(p.Runs)
	}
	// TestAlways's runs may end early too, once its pair is pruned or
	// decayed, but not for this reason.
	if runs["TestOnce"] != 1 || runs["TestAlways"] < 2 || strings.Contains(out.String(), "TestAlways: no bug (stopped after 1 of 3 runs: none reached") {
		t.Errorf("runs %v; want TestOnce 1, TestAlways 2 or more\n%s", runs, out.String())
	}
	if !strings.Contains(out.String(), "TestOnce: no bug (stopped after 1 of 3 runs: none reached a delay location of its plan)") {
		t.Errorf("TestOnce's account does not say why its runs stopped:\n%s", out.String())
	}
}
