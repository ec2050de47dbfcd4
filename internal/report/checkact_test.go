package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

// recoveredInput is a finished run that failed without a crash, with the
// given run log lines, over a site table of four sites in one file.
func recoveredInput(t *testing.T, p *plans.Plan, logLines ...string) RunInput {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "run1.wlog")
	if err := os.WriteFile(log, []byte(strings.Join(logLines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "q.go")
	tab := &sites.Table{Version: sites.Version, Package: "example.com/q", Sites: []sites.Site{
		{ID: 1, Kind: "send", File: f, Line: 10, Expr: "q.ch", Func: "(*Queue).TryRequest"},
		{ID: 2, Kind: "close", File: f, Line: 20, Expr: "q.ch", Func: "(*Queue).Shutdown"},
		{ID: 3, Kind: "check", File: f, Line: 30, Expr: "s.closeChan", Func: "(*Session).isClosed"},
		{ID: 4, Kind: "close", File: f, Line: 40, Expr: "s.closeChan", Func: "(*Session).Close"},
	}}
	return RunInput{Plan: p, Sites: tab, Package: "example.com/q", Test: "TestX", Run: 1,
		LogPath: log, CrashPath: filepath.Join(dir, "none.crash"), ExitCode: 1,
		Stderr: []byte("--- FAIL: TestX (0.01s)\n")}
}

const (
	setupLine = `{"ev":"setup","t":0,"unix_ns":1,"pid":1,"run":1,"seed":5,"seed_set":true,"plan":"p","locations":1,"live_locations":1,"ablate":""}`
	finish    = `{"ev":"finish","t":90,"delays":1,"delay_ns":7,"skip_interference":0,"skip_cap_goroutine":0,"skip_cap_run":0,"hb":0,"reorders":0,"drain_ns":0}`
)

func TestBugRecoveredSendOnClosed(t *testing.T) {
	p := newPlan(pairLoc(plans.UseAfterDispose, 1, 2, 7*ms))
	in := recoveredInput(t, p, setupLine,
		`{"ev":"delay","t":10,"id":1,"site":1,"g":7,"obj":4096,"ns":7000000,"n":0}`,
		`{"ev":"end","t":20,"id":1,"site":1,"g":7,"ns":7000000,"p":0.9}`,
		`{"ev":"panic","t":21,"site":1,"g":7,"obj":4096,"kind":"send-closed"}`,
		finish)
	res, err := Outcome(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != BugFound || res.Bug == nil {
		t.Fatalf("status %s (%s), want a bug", res.Status, res.Reason)
	}
	b := res.Bug
	if !b.Recovered || b.Kind != plans.UseAfterDispose || b.Panic != "send on closed channel" || b.Failing.Line != 10 || b.PanickingGoroutine != 7 {
		t.Fatalf("bug: %+v", b)
	}
	if o := res.PlanOutcome(); o.Bug == nil || o.Bug.Delayed != 1 || o.Bug.Failing != 1 {
		t.Fatalf("plan outcome bug: %+v", o.Bug)
	}
}

func TestNoBugRecoveredPanicWithoutItsDelay(t *testing.T) {
	p := newPlan(pairLoc(plans.UseAfterDispose, 1, 2, 7*ms))
	// The delay was in another goroutine than the one that panicked.
	in := recoveredInput(t, p, setupLine,
		`{"ev":"delay","t":10,"id":1,"site":1,"g":8,"obj":4096,"ns":7000000,"n":0}`,
		`{"ev":"end","t":20,"id":1,"site":1,"g":8,"ns":7000000,"p":0.9}`,
		`{"ev":"panic","t":21,"site":1,"g":7,"obj":4096,"kind":"send-closed"}`,
		finish)
	res, err := Outcome(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Fail || !strings.Contains(res.Reason, "recovered MEMORDER panic") {
		t.Fatalf("status %s (%s), want a failure naming the recovered panic", res.Status, res.Reason)
	}
	// A passing run with a recovered panic is not a bug: the program
	// handled it.
	in.ExitCode = 0
	in.Stderr = nil
	if res, _ := Outcome(in); res.Status != Pass {
		t.Fatalf("passing run: status %s", res.Status)
	}
}

func TestBugCheckThenActRecoveredOrCrashed(t *testing.T) {
	p := newPlan(pairLoc(plans.CheckThenAct, 3, 3, 10*ms))
	lines := []string{setupLine,
		`{"ev":"delay","t":10,"id":1,"site":3,"g":7,"obj":4096,"ns":10000000,"n":0}`,
		`{"ev":"end","t":20,"id":1,"site":3,"g":7,"ns":10000000,"p":0.9}`,
		`{"ev":"panic","t":21,"site":4,"g":7,"obj":4096,"kind":"close-closed"}`,
		finish}
	in := recoveredInput(t, p, lines...)
	res, err := Outcome(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != BugFound || res.Bug.Kind != plans.CheckThenAct || res.Bug.Failing.Line != 40 ||
		res.Bug.Partner == nil || res.Bug.Partner.Line != 30 {
		t.Fatalf("status %s (%s), bug %+v", res.Status, res.Reason, res.Bug)
	}
	// Delayed in another goroutine: the panicking goroutine acted on a
	// check that was not delayed; not this pair.
	in = recoveredInput(t, p, strings.ReplaceAll(strings.Join(lines, "\n"), `"site":4,"g":7`, `"site":4,"g":9`))
	if res, _ := Outcome(in); res.Status != Fail {
		t.Fatalf("other goroutine: status %s", res.Status)
	}
}

// The other side of a check-then-act delay: goroutine 8 was delayed after
// its check (site 3), goroutine 7 passed its own check during that delay
// (its delay there was skipped on the partner's side, the skip names the
// delay) and closed second. Its panic is the pair's bug; without the
// partner skip (an interference skip says nothing about the delay's
// goroutine), it is not.
func TestBugCheckThenActOtherSidePanics(t *testing.T) {
	for _, why := range []string{"partner", "interference"} {
		p := newPlan(pairLoc(plans.CheckThenAct, 3, 3, 7*ms))
		in := recoveredInput(t, p, setupLine,
			`{"ev":"delay","t":10,"id":1,"site":3,"g":8,"obj":4096,"ns":7000000,"n":0}`,
			`{"ev":"skip","t":12,"site":3,"g":7,"n":0,"why":"`+why+`","by":3,"id":1,"delay_g":8}`,
			`{"ev":"end","t":20,"id":1,"site":3,"g":8,"ns":7000000,"p":0.9}`,
			`{"ev":"panic","t":21,"site":4,"g":7,"obj":4096,"kind":"close-closed"}`,
			finish)
		res, err := Outcome(in)
		if err != nil {
			t.Fatal(err)
		}
		if why != "partner" {
			if res.Status == BugFound {
				t.Errorf("%s skip: attributed %+v", why, res.Bug)
			}
			continue
		}
		if res.Status != BugFound || res.Bug == nil {
			t.Fatalf("status %s (%s), want a bug", res.Status, res.Reason)
		}
		b := res.Bug
		if b.Kind != plans.CheckThenAct || b.PanickingGoroutine != 7 || b.Delay.Goroutine != 8 || b.PartnerGoroutine != 7 || b.Failing.Line != 40 {
			t.Errorf("bug: %+v", b)
		}
		if len(b.Spared) != 1 || b.Spared[0].Site != 3 || b.Spared[0].Goroutine != 7 {
			t.Errorf("spared: %+v", b.Spared)
		}
	}
}
