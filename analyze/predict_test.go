package analyze

import (
	"testing"

	"github.com/memorder/wafl/plans"
)

// newtSites is fosrl/newt #176's shape: Connect stores c.conn (site 1),
// the ping monitor loads and dereferences c.conn (site 4), Close stores
// nil in it (site 5); site 9 loads a conn field of another type, site 10
// one of the same name in another package without a type.
var newtSites = map[uint32]SiteInfo{
	1:  NewSiteInfo("atomic-store", "c.conn", "sync/atomic.Pointer[m.Conn]", "/src/m/m.go"),
	4:  NewSiteInfo("atomic-load", "c.conn", "sync/atomic.Pointer[m.Conn]", "/src/m/m.go"),
	5:  NewSiteInfo("atomic-store", "c.conn", "sync/atomic.Pointer[m.Conn]", "/src/m/m.go"),
	9:  NewSiteInfo("atomic-load", "s.conn", "sync/atomic.Pointer[m.Other]", "/src/m/m.go"),
	10: NewSiteInfo("load", "p.conn", "", "/src/other/o.go"),
	11: NewSiteInfo("close", "c.done", "chan struct{}", "/src/m/m.go"),
}

// The monitor (goroutine 2) started but had not reached its load when the
// test closed the client 30 ms later: the trace has the init, the fork row
// and the dispose, no use.
func lateMonitor() []row {
	const conn = 0xC0
	return []row{
		initAt(0, 1, 1, 1, conn),
		forkAt(1*ms, 1, 1, 2),
		disposeAt(31*ms, 1, 2, 5, conn),
	}
}

func TestPredictLateGoroutine(t *testing.T) {
	p, st := analyzeRows(t, lateMonitor(), Options{Sites: newtSites})
	wantPairs(t, p, "use-after-dispose 4→5")
	l := p.Location(4)
	if l.MaxGapNs != 30*ms || l.DelayNs != 37_500_000 {
		t.Fatalf("location: %+v", l)
	}
	if pr := l.Pairs[0]; pr.From != plans.FromPredicted || pr.Object != 0xC0 {
		t.Fatalf("pair: %+v", pr)
	}
	if st.Predicted != 1 || st.Candidates != 1 {
		t.Fatalf("stats: %+v", st)
	}
	// The exact passes predict the same.
	pe, _ := analyzeTuned(t, lateMonitor(), Options{Sites: newtSites}, &tuning{noStream: true})
	wantPairs(t, pe, "use-after-dispose 4→5")
}

func TestNoPredictWithoutLateGoroutine(t *testing.T) {
	const conn = 0xC0
	cases := map[string][]row{
		// The monitor ran (it closed c.done): nothing was late.
		"child ran": {
			initAt(0, 1, 1, 1, conn),
			forkAt(1*ms, 1, 1, 2),
			disposeAt(2*ms, 2, 1, 11, 0xD0),
			disposeAt(31*ms, 1, 2, 5, conn),
		},
		// The dispose came before the monitor started.
		"dispose first": {
			initAt(0, 1, 1, 1, conn),
			disposeAt(1*ms, 1, 1, 5, conn),
			forkAt(2*ms, 1, 1, 2),
		},
		// The dispose came more than δ after the fork.
		"far": {
			forkAt(1*ms, 1, 1, 2),
			disposeAt(500*ms, 1, 2, 5, conn),
		},
		// The late goroutine is a child of the disposing goroutine, forked
		// after the dispose in its program order (clock 2 > 1).
		"fork ordered": {
			disposeAt(1*ms, 1, 1, 5, conn),
			forkAt(1*ms, 1, 2, 2),
		},
	}
	for name, rows := range cases {
		p, st := analyzeRows(t, rows, Options{Sites: newtSites})
		if !p.Empty() || st.Predicted != 0 {
			t.Errorf("%s: predicted %d: %v", name, st.Predicted, pairsOf(p))
		}
	}
	// Without a site table nothing is predicted.
	if p, _ := analyzeRows(t, lateMonitor(), Options{}); !p.Empty() {
		t.Errorf("no sites: %v", pairsOf(p))
	}
}

// A pair the trace saw is not predicted again, and keeps its own gap.
func TestPredictKeepsSeenPair(t *testing.T) {
	const conn = 0xC0
	p, st := analyzeRows(t, []row{
		initAt(0, 1, 1, 1, conn),
		forkAt(1*ms, 1, 1, 2),
		forkAt(1*ms, 1, 2, 3),
		useAt(2*ms, 3, 1, 4, conn),
		disposeAt(10*ms, 1, 3, 5, conn),
	}, Options{Sites: newtSites})
	wantPairs(t, p, "use-after-dispose 4→5")
	if pr := p.Location(4).Pairs[0]; pr.From != "" || pr.MaxGapNs != 8*ms || st.Predicted != 0 {
		t.Fatalf("pair: %+v, predicted %d", pr, st.Predicted)
	}
}

func TestFieldOf(t *testing.T) {
	for expr, want := range map[string]string{
		"c.conn": "conn", "s.cl.conn": "conn", "conn": "", "c.m[k]": "m", "m[k]": "", "w.wd[w.ids[p]]": "wd", "f()[k]": "", "]": "", "(*p).x_1": "x_1", "": "",
	} {
		if got := FieldOf(expr); got != want {
			t.Errorf("FieldOf(%q) = %q, want %q", expr, got, want)
		}
	}
}
