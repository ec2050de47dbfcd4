package inject

import (
	"testing"
	"unsafe"

	"github.com/memorder/wafl/abi"
)

func TestChanClosedProbe(t *testing.T) {
	if closedOff == 0 {
		t.Fatal("the channel header layout was not confirmed: recovered close and send panics would go unseen")
	}
	open, shut := make(chan string, 2), make(chan string, 2)
	shut <- "x"
	close(shut)
	if chanClosed(chanPtr(open)) || !chanClosed(chanPtr(shut)) {
		t.Fatalf("chanClosed: open %v, closed %v", chanClosed(chanPtr(open)), chanClosed(chanPtr(shut)))
	}
}

// TestClosingAndSendingLogPanics: the hooks log exactly the operations
// that will panic.
func TestClosingAndSendingLogPanics(t *testing.T) {
	e := newTestEngine(t, testPlan(location(1, 5*ms, 1, 2)), nil)
	old := eng
	eng = e.engine
	t.Cleanup(func() { eng = old })
	open, shut := make(chan int), make(chan int)
	close(shut)
	Closing(3, chanPtr(open))
	Sending(4, chanPtr(open))
	Closing(5, chanPtr(shut))
	Sending(6, chanPtr(shut))
	Closing(7, unsafe.Pointer(nil))
	Sending(8, unsafe.Pointer(nil)) // blocks forever, does not panic
	want := map[float64]abi.PanicKind{5: abi.PanicCloseClosed, 6: abi.PanicSendClosed, 7: abi.PanicCloseNil}
	got := map[float64]abi.PanicKind{}
	for _, r := range e.records(t) {
		if r["ev"] == abi.EvPanic {
			got[r["site"].(float64)] = abi.PanicKind(r["kind"].(string))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("panic records %v, want %v", got, want)
	}
	for s, k := range want {
		if got[s] != k {
			t.Errorf("site %v: %q, want %q", s, got[s], k)
		}
	}
}

// TestPanicChecksNoAllocs: the checks on the path of every close and send
// of a detection run allocate nothing when nothing will panic.
func TestPanicChecksNoAllocs(t *testing.T) {
	ch := make(chan int, 1)
	p := chanPtr(ch)
	if n := testing.AllocsPerRun(100, func() { Closing(1, p); Sending(1, p) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// TestAtDerefLogsNilAtPlannedSites: a dereferencing use logs a nil slot
// as the panic about to happen at a site the plan mentions (ℓ1 or a
// partner), with the map kind for a map write, and nothing at an
// unplanned site or for a non-nil slot.
func TestAtDerefLogsNilAtPlannedSites(t *testing.T) {
	e := newTestEngine(t, testPlan(location(1, 1*ms, 1, 2)), nil)
	oldE, oldT := eng, table
	eng, table = e.engine, e.fast
	t.Cleanup(func() { eng, table = oldE, oldT })
	var nilPtr *int
	var nilMap map[string]int
	full := new(int)
	AtDeref(1, unsafe.Pointer(&nilPtr), abi.UseDeref)    // ℓ1, nil: logged
	AtDeref(2, unsafe.Pointer(&nilMap), abi.UseMapWrite) // partner, nil map: logged
	AtDeref(2, unsafe.Pointer(&full), abi.UseDeref)      // not nil
	AtDeref(9, unsafe.Pointer(&nilPtr), abi.UseDeref)    // unplanned
	want := map[float64]abi.PanicKind{1: abi.PanicNilDeref, 2: abi.PanicNilMap}
	got := map[float64]abi.PanicKind{}
	n := 0
	for _, r := range e.records(t) {
		if r["ev"] == abi.EvPanic {
			got[r["site"].(float64)] = abi.PanicKind(r["kind"].(string))
			n++
		}
	}
	if n != len(want) {
		t.Fatalf("%d panic records %v, want %v", n, got, want)
	}
	for s, k := range want {
		if got[s] != k {
			t.Errorf("site %v: %q, want %q", s, got[s], k)
		}
	}
}

// TestAtDerefNoAllocs: AtDeref at an unplanned site, and at a planned
// one whose slot is not nil, allocates nothing.
func TestAtDerefNoAllocs(t *testing.T) {
	restore := installTestEngine(t)
	defer restore()
	x := new(int)
	for _, site := range []uint32{2, pZeroSite} {
		if n := testing.AllocsPerRun(1000, func() { AtDeref(site, unsafe.Pointer(&x), abi.UseDeref) }); n != 0 {
			t.Errorf("AtDeref(%d) allocates %v times per call", site, n)
		}
	}
}

func BenchmarkAtDerefUnplanned(b *testing.B) {
	defer installTestEngine(b)()
	x := new(int)
	b.ReportAllocs()
	for b.Loop() {
		AtDeref(2, unsafe.Pointer(&x), abi.UseDeref)
	}
}
