package analyze

import (
	"maps"
	"slices"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

func checkAt(t int64, g uint64, clock, site uint32, obj uint64) row {
	return row{t, g, clock, site, obj, abi.OpCheck}
}

// quic-go #2143's shape: g1 checks closeChan (site 4) and closes it (site
// 5); g2 checks it 8 ms later and leaves it alone.
func TestBugCheckThenCloseChannel(t *testing.T) {
	const ch = 0xC1
	p, st := analyzeRows(t, []row{
		checkAt(1*ms, 1, 1, 4, ch),
		disposeAt(1*ms+1000, 1, 1, 5, ch),
		checkAt(9*ms, 2, 1, 4, ch),
	}, Options{})
	wantPairs(t, p, "check-then-act 4→4")
	l := p.Location(4)
	if l.MaxGapNs != 8*ms || l.DelayNs != 10*ms {
		t.Fatalf("location: %+v", l)
	}
	// The second goroutine's check lies in the window: while one goroutine
	// is delayed after the check, the other's check is not delayed.
	if !slices.Equal(l.Interference, []uint32{4}) {
		t.Errorf("interference = %v, want [4]", l.Interference)
	}
	if st.Checks != 2 {
		t.Errorf("Checks = %d, want 2", st.Checks)
	}
	// The exact passes over the row spill see the check rows too.
	ps, _ := analyzeRows(t, []row{
		checkAt(1*ms, 1, 1, 4, ch),
		disposeAt(1*ms+1000, 1, 1, 5, ch),
		checkAt(9*ms, 2, 1, 4, ch),
	}, Options{RowSpill: true, TempDir: t.TempDir()})
	if l := ps.Location(4); l == nil || !slices.Equal(l.Interference, []uint32{4}) || l.DelayNs != 10*ms {
		t.Errorf("row spill: location %+v", l)
	}
}

// The flag form: the check object is the flag, the dispose another object.
func TestBugCheckFlagThenClose(t *testing.T) {
	const flag, qch = 0xF1, 0xC2
	p, _ := analyzeRows(t, []row{
		checkAt(0, 1, 1, 7, flag),
		useAt(1*ms, 1, 1, 8, 0xAA),
		disposeAt(2*ms, 1, 1, 9, qch),
		checkAt(5*ms, 2, 1, 10, flag),
	}, Options{})
	// The observed pair and its mirror (the checks are two sites).
	wantPairs(t, p, "check-then-act 7→10", "check-then-act 10→7")
}

// Two goroutines check one flag at two sites and either may check first:
// the pair seen (7 → 10) is mirrored (10 → 7), so that in a run where g2
// checks first g2 is the side delayed. The mirror has the observed gap,
// its window is g1's, and each location is in the other's interference
// set: of the two sides, one is delayed at a time.
func TestBugCheckThenActMirrored(t *testing.T) {
	const flag, qch = 0xF1, 0xC2
	p, st := analyzeRows(t, []row{
		checkAt(0, 1, 1, 7, flag),
		disposeAt(2*ms, 1, 1, 9, qch),
		checkAt(4*ms, 2, 1, 10, flag),
	}, Options{})
	wantPairs(t, p, "check-then-act 7→10", "check-then-act 10→7")
	seen, mirror := p.Location(7), p.Location(10)
	if seen.Pairs[0].From != "" || mirror.Pairs[0].From != plans.FromMirror {
		t.Errorf("from: seen %q, mirror %q", seen.Pairs[0].From, mirror.Pairs[0].From)
	}
	if mirror.MaxGapNs != 4*ms || mirror.DelayNs != seen.DelayNs {
		t.Errorf("mirror location %+v, seen %+v", mirror, seen)
	}
	if !slices.Contains(seen.Interference, 10) || !slices.Contains(mirror.Interference, 7) {
		t.Errorf("interference: 7 → %v, 10 → %v", seen.Interference, mirror.Interference)
	}
	if st.Mirrored != 1 {
		t.Errorf("Mirrored = %d, want 1", st.Mirrored)
	}
}

// When the trace has both orders, both pairs are observed: nothing is
// mirrored. One site checked by both goroutines needs no mirror either.
func TestCheckThenActBothOrdersSeen(t *testing.T) {
	const flag, qch, flag2 = 0xF1, 0xC2, 0xF2
	p, st := analyzeRows(t, []row{
		checkAt(0, 1, 1, 7, flag),
		disposeAt(2*ms, 1, 1, 9, qch),
		checkAt(4*ms, 2, 1, 10, flag),
		checkAt(200*ms, 2, 2, 10, flag2),
		disposeAt(202*ms, 2, 2, 11, 0xC3),
		checkAt(204*ms, 1, 2, 7, flag2),
	}, Options{})
	wantPairs(t, p, "check-then-act 7→10", "check-then-act 10→7")
	for _, l := range p.Locations {
		if l.Pairs[0].From != "" {
			t.Errorf("location %d: pair from %q, want the trace's", l.Site, l.Pairs[0].From)
		}
	}
	if st.Mirrored != 0 {
		t.Errorf("Mirrored = %d, want 0", st.Mirrored)
	}
}

func TestNoBugCheckWithoutAct(t *testing.T) {
	const ch = 0xC1
	// g1 checks but disposes nothing before g2's check; g1's dispose after
	// g2's check does not count (g2 saw the object before it).
	p, _ := analyzeRows(t, []row{
		checkAt(1*ms, 1, 1, 4, ch),
		checkAt(9*ms, 2, 1, 4, ch),
		disposeAt(10*ms, 1, 1, 5, ch),
	}, Options{})
	// No pair of the two checks; g2's check is stale, though: g1's
	// dispose came 1 ms after it (TestBugStaleCheck).
	wantPairs(t, p, "check-then-act 4→5")
}

// A stale check (fsnotify's Add after its isClosed check, certinel PR
// #18): g2 checks the done channel at site 4 and goes on; g1 closes it
// (site 6) 8 ms later. The pair (4 → 6) delays g2 after its check past
// the close, with the gap for its length and g1's window. The checker's
// own dispose makes no stale pair (g3), nor does a dispose beyond δ (g5).
func TestBugStaleCheck(t *testing.T) {
	const ch, ch2, ch3 = 0xC1, 0xC2, 0xC3
	p, _ := analyzeRows(t, []row{
		checkAt(1*ms, 2, 1, 4, ch),
		useAt(2*ms, 2, 2, 9, 0xAA),
		checkAt(8*ms, 1, 1, 7, ch),
		disposeAt(9*ms, 1, 2, 6, ch),
		checkAt(20*ms, 3, 1, 4, ch2),
		disposeAt(21*ms, 3, 2, 6, ch2),
		checkAt(30*ms, 5, 1, 4, ch3),
		disposeAt(300*ms, 1, 3, 6, ch3),
	}, Options{})
	wantPairs(t, p, "check-then-act 4→6")
	l := p.Location(4)
	if l.MaxGapNs != 8*ms || l.DelayNs != 10*ms {
		t.Errorf("location: %+v", l)
	}
}

func TestNoBugCheckThenActOrderedOrFar(t *testing.T) {
	const ch = 0xC1
	p, st := analyzeRows(t, []row{
		// g4 forked by g1 after its check and dispose: ordered
		checkAt(1*ms, 1, 1, 4, ch),
		disposeAt(2*ms, 1, 1, 5, ch),
		forkAt(2*ms, 1, 1, 4),
		checkAt(4*ms, 4, 1, 6, ch),
		// another goroutine, beyond δ
		checkAt(500*ms, 3, 1, 4, ch),
		// one goroutine checks twice
		checkAt(1*ms, 5, 1, 4, 0xC2),
		disposeAt(2*ms, 5, 1, 5, 0xC2),
		checkAt(3*ms, 5, 2, 4, 0xC2),
	}, Options{})
	wantPairs(t, p)
	if st.PrunedFork != 1 {
		t.Errorf("PrunedFork = %d, want 1", st.PrunedFork)
	}
}

// fsnotify's isClosed(): every Add and Remove first selects on w.done
// (site 4) and then deletes an entry (site 5); Close closes w.done (site
// 6) at the end. The second goroutine's check finds w.done as open as
// the first's did: deleting an entry is no act on the channel, and an
// object the trace disposes of is acted on only by disposing of it.
func TestNoBugCheckActsOnAnotherObject(t *testing.T) {
	const done, e1, e2 = 0xD0, abi.EntryTag | 1, abi.EntryTag | 2
	rows := []row{
		checkAt(1*ms, 1, 1, 4, done),
		disposeAt(2*ms, 1, 2, 5, e1),
		checkAt(3*ms, 2, 1, 4, done),
		disposeAt(4*ms, 2, 2, 5, e2),
		disposeAt(900*ms, 3, 1, 6, done), // Close, long after
	}
	p, _ := analyzeRows(t, rows, Options{})
	wantPairs(t, p)
	// When the first goroutine closes the channel it checked, it is the
	// act (quic-go's shape, TestBugCheckThenCloseChannel).
	rows[1] = disposeAt(2*ms, 1, 2, 6, done)
	p, _ = analyzeRows(t, rows, Options{})
	wantPairs(t, p, "check-then-act 4→4")
}

// removePath and updatePath of fsnotify v1.7.0 look the path up (sites 1
// and 2) and delete the watch's entry (site 3) between w.mu.Lock() and
// the deferred Unlock: no check can come between another's check and
// act, and a delay after the check would only hold the lock. Under an
// RLock, or with the act after the section, or with the other check not
// under the lock, the instance stands.
func TestNoBugCheckActAtomic(t *testing.T) {
	const path, wd = abi.EntryTag | 0x10, abi.EntryTag | 0x20
	sec := func(kind, expr, call string, line int) SiteInfo {
		return NewSiteInfo(kind, expr, "", "/src/f/f.go").InSection(call, "/src/f/f.go", line, 2)
	}
	rows := []row{
		checkAt(1*ms, 1, 1, 1, path),
		disposeAt(1*ms+500, 1, 2, 3, wd),
		checkAt(3*ms, 2, 1, 2, path),
	}
	info := map[uint32]SiteInfo{
		1: sec("check", "w.path[path]", "w.mu.Lock()", 187),
		2: sec("check", "w.path[path]", "w.mu.Lock()", 214),
		3: sec("delete", "w.wd[wd]", "w.mu.Lock()", 187),
	}
	p, st := analyzeRows(t, rows, Options{Sites: info})
	wantPairs(t, p)
	if st.PrunedAtomic != 1 {
		t.Errorf("PrunedAtomic = %d, want 1", st.PrunedAtomic)
	}
	for name, edit := range map[string]func(m map[uint32]SiteInfo){
		"check under RLock":         func(m map[uint32]SiteInfo) { m[1] = sec("check", "w.path[path]", "w.mu.RLock()", 187) },
		"act after the section":     func(m map[uint32]SiteInfo) { m[3] = sec("delete", "w.wd[wd]", "w.mu.Lock()", 190) },
		"act outside any section":   func(m map[uint32]SiteInfo) { m[3] = NewSiteInfo("delete", "w.wd[wd]", "", "/src/f/f.go") },
		"other check under no lock": func(m map[uint32]SiteInfo) { m[2] = NewSiteInfo("check", "w.path[path]", "", "/src/f/f.go") },
		"other check, other lock":   func(m map[uint32]SiteInfo) { m[2] = sec("check", "w.path[path]", "w.cmu.Lock()", 214) },
	} {
		m := maps.Clone(info)
		edit(m)
		p, _ := analyzeRows(t, rows, Options{Sites: m})
		if len(p.Locations) == 0 {
			t.Errorf("%s: no pair", name)
		}
	}
}
