package analyze

import (
	"fmt"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

// goAt: parent executed the go statement at site, its counter being clock.
func goAt(t int64, parent uint64, clock, site uint32) row {
	return row{t, parent, clock, site, 0, abi.OpGo}
}

// fakeReach is a Reacher from literal maps.
type fakeReach struct {
	tests map[string]map[uint32]int
	gos   map[uint32]map[uint32]int
}

func (f fakeReach) Test(name string) map[uint32]int { return f.tests[name] }
func (f fakeReach) Go(site uint32) map[uint32]int   { return f.gos[site] }

// mmcSites is daangn/minimemcached's run/close shape: Run stores the
// listener (site 1) and starts go m.serve() (site 2), whose loop calls
// m.l.Accept() (site 3); Close sets s.l = nil (site 4). Site 5 uses the
// same field in a function only another test calls; site 6 stores it in
// another goroutine; site 7 is an access of another field the serve
// goroutine makes.
var mmcSites = map[uint32]SiteInfo{
	1: NewSiteInfo("store", "s.l", "net.Listener", "/src/m/server.go"),
	2: NewSiteInfo("go", "func literal", "", "/src/m/m.go"),
	3: NewSiteInfo("use", "m.l", "net.Listener", "/src/m/m.go"),
	4: NewSiteInfo("store", "s.l", "net.Listener", "/src/m/server.go"),
	5: NewSiteInfo("use", "x.l", "net.Listener", "/src/m/other.go"),
	6: NewSiteInfo("store", "s.l", "net.Listener", "/src/m/server.go"),
	7: NewSiteInfo("use", "m.items", "map[string]*m.item", "/src/m/m.go"),
}

var mmcReach = fakeReach{
	tests: map[string]map[uint32]int{"TestX": {1: 2, 3: 3, 4: 2, 6: 2}},
	gos:   map[uint32]map[uint32]int{2: {3: 1, 7: 1}},
}

// The serve goroutine never ran: the trace has the go row, no fork row.
func neverServed() []row {
	const l = 0x10
	return []row{
		initAt(0, 1, 1, 1, l),
		goAt(1*ms, 1, 1, 2),
		disposeAt(5*ms, 1, 2, 4, l),
	}
}

func TestBugStaticNeverRan(t *testing.T) {
	p, st := analyzeRows(t, neverServed(), Options{Sites: mmcSites, Reach: mmcReach})
	wantPairs(t, p, "use-after-dispose 3→4")
	l := p.Location(3)
	if pr := l.Pairs[0]; pr.From != plans.FromStatic || pr.MaxGapNs != 4*ms || pr.Object != 0x10 {
		t.Fatalf("pair %+v", pr)
	}
	if l.DelayNs != 5*ms {
		t.Fatalf("delay %d, want α × 4 ms", l.DelayNs)
	}
	if st.Static != 1 || st.StaticLeft != 0 || st.Unstarted != 1 || st.Gos != 1 || st.Predicted != 0 {
		t.Fatalf("stats: %+v", st)
	}
	// The exact passes find the same.
	pe, _ := analyzeTuned(t, neverServed(), Options{Sites: mmcSites, Reach: mmcReach}, &tuning{noStream: true})
	wantPairs(t, pe, "use-after-dispose 3→4")
}

// Without a reach the goroutine that never ran still gets predicted
// partners, from the whole site table.
func TestPredictNeverRanWithoutReach(t *testing.T) {
	p, st := analyzeRows(t, neverServed(), Options{Sites: mmcSites})
	wantPairs(t, p, "use-after-dispose 3→4", "use-after-dispose 5→4")
	if st.Predicted != 2 || st.Static != 0 || st.Unstarted != 1 {
		t.Fatalf("stats: %+v", st)
	}
	for _, l := range p.Locations {
		if l.Pairs[0].From != plans.FromPredicted {
			t.Fatalf("pair %+v", l.Pairs[0])
		}
	}
}

// Predicted partners are scoped to the sites the test may reach: site 5
// is reached only from another test.
func TestPredictScopedToTest(t *testing.T) {
	const l = 0x10
	rows := []row{
		initAt(0, 1, 1, 1, l),
		forkAt(1*ms, 1, 1, 2), // a callback's goroutine: no go row, no access
		disposeAt(5*ms, 1, 2, 4, l),
	}
	p, st := analyzeRows(t, rows, Options{Sites: mmcSites, Reach: mmcReach})
	wantPairs(t, p, "use-after-dispose 3→4")
	if st.Predicted != 1 || st.Static != 0 {
		t.Fatalf("stats: %+v", st)
	}
	// A test the reach does not know: not scoped.
	r := fakeReach{gos: mmcReach.gos}
	p, _ = analyzeRows(t, rows, Options{Sites: mmcSites, Reach: r})
	wantPairs(t, p, "use-after-dispose 3→4", "use-after-dispose 5→4")
}

// Use-before-init: another goroutine stores the listener after the go
// statement; the serve goroutine, had it run, could have used it first.
func TestBugStaticUseBeforeInit(t *testing.T) {
	const l = 0x10
	p, st := analyzeRows(t, []row{
		goAt(1*ms, 1, 1, 2),
		initAt(3*ms, 1, 2, 6, l),
	}, Options{Sites: mmcSites, Reach: mmcReach})
	wantPairs(t, p, "use-before-init 6→3")
	if pr := p.Location(6).Pairs[0]; pr.From != plans.FromStatic || pr.MaxGapNs != 2*ms {
		t.Fatalf("pair %+v", pr)
	}
	if st.Static != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestNoStaticPair(t *testing.T) {
	const l = 0x10
	cases := map[string][]row{
		// The parent disposed before its go statement (clock 1 ≤ 1).
		"dispose before go": {
			disposeAt(1*ms, 1, 1, 4, l),
			goAt(1*ms, 1, 1, 2),
		},
		// The parent stored before its go statement: ordered.
		"init before go": {
			initAt(1*ms, 1, 1, 6, l),
			goAt(1*ms, 1, 1, 2),
		},
		// More than δ after the go row.
		"far": {
			goAt(1*ms, 1, 1, 2),
			disposeAt(300*ms, 1, 2, 4, l),
		},
		// The goroutine ran and made the use: the trace's pair, not a
		// static one.
		"seen": {
			goAt(1*ms, 1, 1, 2),
			forkAt(1*ms, 1, 1, 3),
			useAt(2*ms, 3, 1, 3, l),
			disposeAt(5*ms, 1, 2, 4, l),
		},
	}
	for name, rows := range cases {
		p, st := analyzeRows(t, rows, Options{Sites: mmcSites, Reach: mmcReach})
		if st.Static != 0 {
			t.Errorf("%s: static %d: %v", name, st.Static, pairsOf(p))
		}
		if name == "seen" {
			wantPairs(t, p, "use-after-dispose 3→4")
			if p.Location(3).Pairs[0].From != "" {
				t.Errorf("seen: %+v", p.Location(3).Pairs[0])
			}
		}
	}
	// Without a go statement's reach nothing is static.
	if _, st := analyzeRows(t, neverServed(), Options{Sites: mmcSites, Reach: fakeReach{}}); st.Static != 0 {
		t.Errorf("no reach of the go statement: static %d", st.Static)
	}
}

// A goroutine that ran (it used m.items) and stopped short of its
// listener use: the use it did not make pairs with the dispose after its
// last row.
func TestBugStaticRanShort(t *testing.T) {
	const l, items = 0x10, 0x20
	p, st := analyzeRows(t, []row{
		initAt(0, 1, 1, 1, l),
		goAt(1*ms, 1, 1, 2),
		forkAt(1*ms, 1, 1, 3),
		useAt(2*ms, 3, 1, 7, items),
		disposeAt(10*ms, 1, 2, 4, l),
	}, Options{Sites: mmcSites, Reach: mmcReach})
	wantPairs(t, p, "use-after-dispose 3→4")
	pr := p.Location(3).Pairs[0]
	if pr.From != plans.FromStatic || pr.MaxGapNs != 8*ms || st.Static != 1 || st.Unstarted != 0 {
		t.Fatalf("pair %+v, stats %+v", pr, st)
	}
}

// Static pairs are ranked — reached use sites first, then call distance
// — and capped; the rest are counted as left.
func TestStaticRankedAndCapped(t *testing.T) {
	const n = MaxStatic + 4
	info := map[uint32]SiteInfo{2: NewSiteInfo("go", "func literal", "", "/src/m/m.go")}
	gr := map[uint32]int{}
	var rows []row
	rows = append(rows, goAt(1*ms, 1, 1, 2))
	for i := range n {
		field := fmt.Sprintf("f%d", i)
		use, disp := uint32(100+i), uint32(200+i)
		info[use] = NewSiteInfo("use", "m."+field, "*int", "/src/m/m.go")
		info[disp] = NewSiteInfo("store", "m."+field, "*int", "/src/m/m.go")
		gr[use] = n - i // later fields nearer
		rows = append(rows, disposeAt(int64(2+i)*ms, 1, 2, disp, uint64(0x1000+i)))
	}
	// The first use site was reached in the trace by another goroutine
	// (on another object, long before).
	rows = append([]row{useAt(0, 9, 1, 100, 0x9999)}, rows...)
	r := fakeReach{gos: map[uint32]map[uint32]int{2: gr}}
	p, st := analyzeRows(t, rows, Options{Sites: info, Reach: r})
	if st.Static != MaxStatic || st.StaticLeft != 4 {
		t.Fatalf("stats %+v", st)
	}
	// Kept: the reached site 100 (the farthest), then the nearest ones.
	if p.Location(100) == nil {
		t.Errorf("the reached use site was left out: %v", pairsOf(p))
	}
	for i := 1; i <= 4; i++ {
		if p.Location(uint32(100+i)) != nil {
			t.Errorf("site %d (distance %d) kept over nearer ones", 100+i, n-i)
		}
	}
	// Extending that plan (a detection run that also recorded), the
	// pairs it has are left out of the ranking: the four left come in.
	kept := map[uint32]bool{}
	for _, l := range p.Locations {
		kept[l.Site] = true
	}
	known := func(first, second uint32) bool { return kept[first] }
	p2, st2 := analyzeRows(t, rows, Options{Sites: info, Reach: r, Known: known})
	wantPairs(t, p2, "use-after-dispose 101→201", "use-after-dispose 102→202", "use-after-dispose 103→203", "use-after-dispose 104→204")
	if st2.Static != 4 || st2.StaticLeft != 0 {
		t.Fatalf("extending: stats %+v", st2)
	}
}

// The serve goroutine logged only after Close disposed the listener: the
// dispose came while it was alive, and its use could have come at once
// (gap 0, the shortest delay).
func TestBugStaticDisposeWhileAlive(t *testing.T) {
	const l, items = 0x10, 0x20
	p, _ := analyzeRows(t, []row{
		goAt(1*ms, 1, 1, 2),
		forkAt(1*ms, 1, 1, 3),
		disposeAt(2*ms, 1, 2, 4, l),
		useAt(3*ms, 3, 1, 7, items),
	}, Options{Sites: mmcSites, Reach: mmcReach})
	wantPairs(t, p, "use-after-dispose 3→4")
	if l := p.Location(3); l.Pairs[0].MaxGapNs != 0 || l.DelayNs != int64(plans.DefaultParams().MinDelayNs) {
		t.Fatalf("location %+v", l)
	}
}

// The partner of a static pair is related to the late goroutine by forks:
// a dispose in another subtest (a cousin) is of another object far more
// often than not, one of a sibling started by the same parent is kept.
func TestStaticPartnerRelatedByForks(t *testing.T) {
	const l = 0x10
	// The test goroutine 1 runs subtests 2 and 3; subtest 2 starts the
	// serve goroutine, which never runs.
	cousin := []row{
		forkAt(0, 1, 1, 2),
		forkAt(0, 1, 2, 3),
		goAt(1*ms, 2, 1, 2),
		disposeAt(2*ms, 3, 1, 4, l),
	}
	if p, st := analyzeRows(t, cousin, Options{Sites: mmcSites, Reach: mmcReach}); st.Static != 0 {
		t.Errorf("cousin: static %v", pairsOf(p))
	}
	// Subtest 2 also started goroutine 4, which disposes: a sibling.
	sibling := []row{
		forkAt(0, 1, 1, 2),
		goAt(1*ms, 2, 1, 2),
		forkAt(1*ms, 2, 2, 4),
		disposeAt(2*ms, 4, 1, 4, l),
	}
	p, st := analyzeRows(t, sibling, Options{Sites: mmcSites, Reach: mmcReach})
	if st.Static != 1 {
		t.Fatalf("sibling: static %d", st.Static)
	}
	wantPairs(t, p, "use-after-dispose 3→4")
	// A sibling started by the same go statement (a loop per object, as
	// zap's flushLoop per BufferedWriteSyncer) is not a partner.
	twin := []row{
		forkAt(0, 1, 1, 2),
		goAt(1*ms, 2, 1, 2),
		goAt(1*ms, 2, 2, 2),
		forkAt(1*ms, 2, 2, 4),
		disposeAt(2*ms, 4, 1, 4, l),
	}
	if p, st := analyzeRows(t, twin, Options{Sites: mmcSites, Reach: mmcReach}); st.Static != 0 {
		t.Errorf("same go statement: static %v", pairsOf(p))
	}
}

// fsnotify v1.7.0 (#616): the event reader (go statement at site 2)
// deletes a watch's entries when its directory is deleted, reading
// w.wd[wd].path (site 30, a map entry's use) — a path no passing run took:
// Remove had deleted the entry (site 31, delete(w.wd, wd)) before the
// reader saw the event. The entry's field key is its map's ("wd"), so the
// reader's unexecuted use pairs with Remove's delete of another key; a
// delete from another map of the same element type does not.
func TestBugStaticMapEntryOffPath(t *testing.T) {
	info := map[uint32]SiteInfo{
		2:  NewSiteInfo("go", "w.readEvents", "", "/src/f/f.go"),
		30: NewSiteInfo("use", "w.wd[wd]", "*f.watch", "/src/f/f.go"),
		31: NewSiteInfo("delete", "w.wd[wd]", "*f.watch", "/src/f/f.go"),
		32: NewSiteInfo("delete", "w.byName[name]", "*f.watch", "/src/f/f.go"),
		33: NewSiteInfo("check", "w.done", "chan struct{}", "/src/f/f.go"),
		// A load of the map field itself, of a type the table does not
		// know (a type parameter): not the entry's slot identity.
		34: NewSiteInfo("load", "x.wd", "", "/src/f/f.go"),
	}
	r := fakeReach{gos: map[uint32]map[uint32]int{2: {30: 2, 33: 1, 34: 1}}}
	const entry, other = abi.EntryTag | 0x77, abi.EntryTag | 0x88
	rows := []row{
		goAt(1*ms, 1, 1, 2),
		forkAt(1*ms, 1, 1, 3),
		{2 * ms, 3, 1, 33, 0x40, abi.OpCheck},
		forkAt(3*ms, 1, 2, 4),
		disposeAt(4*ms, 4, 1, 31, entry),
		forkAt(3*ms, 1, 3, 5),
		disposeAt(5*ms, 5, 1, 32, other),
	}
	p, st := analyzeRows(t, rows, Options{Sites: info, Reach: r})
	wantPairs(t, p, "use-after-dispose 30→31")
	if pr := p.Location(30).Pairs[0]; pr.From != plans.FromStatic || st.Static != 1 {
		t.Fatalf("pair %+v, stats %+v", pr, st)
	}
}
