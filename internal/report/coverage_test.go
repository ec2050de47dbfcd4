package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

// TestAttributeLoadDerefs: a load site (p := s.p at line 10) whose value
// is dereferenced at line 12 (and in a callee in b.go): a crash at the
// dereference is attributed to the load, and the bug names both lines.
func TestAttributeLoadDerefs(t *testing.T) {
	tab := &sites.Table{Version: sites.Version, Sites: []sites.Site{
		{ID: 1, Kind: "load", File: "/m/p/a.go", Line: 10, Expr: "s.p",
			Derefs: []sites.Ref{{File: "/m/p/a.go", Line: 12}, {File: "/m/p/b.go", Line: 7}}},
		{ID: 2, Kind: "dispose", File: "/m/p/a.go", Line: 30, Expr: "s.p"},
	}}
	p := newPlan(pairLoc(plans.UseAfterDispose, 1, 2, ms))
	d := &Delay{ID: 1, Site: 1, G: 11, Ns: ms, Ended: true}
	for _, at := range []struct {
		file string
		line int
	}{{"/m/p/a.go", 12}, {"/m/p/b.go", 7}, {"p/b.go", 7}} {
		c := crashAt(abi.PanicNilDeref, 11, at.file, at.line)
		a, why := Attribute(p, tab, logWith(d), c)
		if a == nil || a.Kind != plans.UseAfterDispose || a.Failing != 1 {
			t.Fatalf("crash at %s:%d: attribution %+v (%s), want use-after-dispose at the load", at.file, at.line, a, why)
		}
		b := newBug(RunInput{Plan: p, Sites: tab, Package: "example.com/p", Test: "TestX"}, a, c)
		if b.Failing.Line != 10 || b.Failing.CrashLine != at.line || b.Failing.CrashFile != at.file {
			t.Errorf("failing %+v: want the load's line 10 and crash line %s:%d", b.Failing, at.file, at.line)
		}
	}
	if a, _ := Attribute(p, tab, logWith(d), crashAt(abi.PanicNilDeref, 11, "/m/p/a.go", 13)); a != nil {
		t.Errorf("crash on a line the load does not reach attributed: %+v", a)
	}
}

// TestWaitGroupKinds: the WaitGroup panics are MEMORDER kinds, attributed
// as use-before-init (a Done or Wait that ran during the delay of its Add)
// and reported under their own SARIF rule.
func TestWaitGroupKinds(t *testing.T) {
	for msg, want := range map[string]abi.PanicKind{
		"sync: negative WaitGroup counter":                                 abi.PanicWGNegative,
		"sync: WaitGroup is reused before previous Wait has returned":      abi.PanicWGReuse,
		"sync: WaitGroup misuse: Add called concurrently with Wait":        abi.PanicWGReuse,
		"runtime error: invalid memory address or nil pointer dereference": abi.PanicNilDeref,
	} {
		if got := classify(msg); got != want || !got.Memorder() {
			t.Errorf("classify(%q) = %q, want %q (memorder)", msg, got, want)
		}
	}
	tab := &sites.Table{Version: sites.Version, Sites: []sites.Site{
		{ID: 1, Kind: "wg-add", File: "/m/p/a.go", Line: 10, Expr: "b.wg"},
		{ID: 2, Kind: "wg-done", File: "/m/p/a.go", Line: 20, Expr: "b.wg"},
	}}
	p := newPlan(pairLoc(plans.UseBeforeInit, 1, 2, ms))
	c := crashAt(abi.PanicWGNegative, 20, "/m/p/a.go", 20)
	a, why := Attribute(p, tab, logWith(&Delay{ID: 1, Site: 1, G: 10, Ns: ms}), c)
	if a == nil || a.Kind != plans.UseBeforeInit || a.Failing != 2 {
		t.Fatalf("attribution %+v (%s), want use-before-init at the Done", a, why)
	}
	b := newBug(RunInput{Plan: p, Sites: tab, Package: "example.com/p", Test: "TestX"}, a, c)
	if b.PanicKind != abi.PanicWGNegative {
		t.Errorf("panic kind %q", b.PanicKind)
	}
	var out bytes.Buffer
	if err := WriteSARIF(&out, []*Bug{b}, SARIFOptions{}); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
			} `json:"results"`
			Tool struct {
				Driver struct {
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	r := log.Runs[0].Results[0]
	if r.RuleID != "waitgroup-negative" || log.Runs[0].Tool.Driver.Rules[r.RuleIndex].ID != "waitgroup-negative" {
		t.Errorf("SARIF result rule %q (index %d), want waitgroup-negative", r.RuleID, r.RuleIndex)
	}
}
