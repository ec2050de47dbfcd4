package analyze

import "testing"

// An address reused by an object of another type (a channel freed and a
// new one allocated at its address) pairs in the trace; the slot types
// of the two sites tell them apart.
func TestSlotTypesDropAddressReuse(t *testing.T) {
	rows := []row{
		useAt(0, 1, 1, 20, 0xA),        // send on a chan struct{}
		disposeAt(5*ms, 2, 1, 10, 0xA), // close of a chan func() at the same address
		useAt(6*ms, 3, 1, 30, 0xB),
		disposeAt(8*ms, 4, 1, 40, 0xB),
	}
	p, st := analyzeRows(t, rows, Options{})
	wantPairs(t, p, "use-after-dispose 20→10", "use-after-dispose 30→40")
	if st.PrunedType != 0 {
		t.Fatalf("without types: PrunedType %d", st.PrunedType)
	}
	types := map[uint32]string{10: "chan func()", 20: "chan struct{}", 30: "*example.com/m.T", 40: "*example.com/m.T"}
	p, st = analyzeRows(t, rows, Options{SlotTypes: types})
	wantPairs(t, p, "use-after-dispose 30→40")
	if st.PrunedType != 1 || st.Candidates != 1 {
		t.Fatalf("stats: %+v", st)
	}
	// An unknown type (a type parameter) pairs with anything.
	delete(types, 10)
	p, _ = analyzeRows(t, rows, Options{SlotTypes: types})
	wantPairs(t, p, "use-after-dispose 20→10", "use-after-dispose 30→40")
}
