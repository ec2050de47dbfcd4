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
	want := map[float64]string{5: abi.PanicCloseClosed, 6: abi.PanicSendClosed, 7: abi.PanicCloseNil}
	got := map[float64]string{}
	for _, r := range e.records(t) {
		if r["ev"] == abi.EvPanic {
			got[r["site"].(float64)] = r["kind"].(string)
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
