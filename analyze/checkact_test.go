package analyze

import (
	"slices"
	"testing"

	"github.com/memorder/wafl/abi"
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
	wantPairs(t, p, "check-then-act 7→10")
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
	wantPairs(t, p)
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
