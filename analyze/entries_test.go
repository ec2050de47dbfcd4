package analyze

import (
	"testing"

	"github.com/memorder/wafl/abi"
)

// Map entries are objects (map, key): the instrumented code's events on
// m[k] carry abi.EntryObj of the map's identity and the key's hash. The
// analysis pairs them like any object: a delete of an entry with a lookup
// of the same entry in another goroutine, not with a lookup of another
// key of the same map, nor with the same key of another map.
func TestEntriesPairByMapAndKey(t *testing.T) {
	const (
		peers, conns  = 0xc000010000, 0xc000020000 // map header addresses
		keyA, keyB    = 0x1234_5678_9abc_def0, 0x0fed_cba9_8765_4321
		siteStore     = 10 // s.peers[id] = p        (g1, before the test's goroutines)
		siteLookup    = 20 // p := s.peers[id]; p.x (g2)
		siteDelete    = 30 // delete(s.peers, id)    (g3)
		siteLookupB   = 21 // s.peers[other].x       (g4)
		siteOtherMap  = 22 // s.conns[id].x          (g5)
		siteDeleteMap = 31 // delete(s.conns, other) (g6)
	)
	a := abi.EntryObj(peers, keyA)
	b := abi.EntryObj(peers, keyB)
	c := abi.EntryObj(conns, keyA)
	d := abi.EntryObj(conns, keyB)
	for _, o := range []uint64{a, b, c, d} {
		if !abi.IsEntry(o) || abi.IsEntry(peers) {
			t.Fatalf("entry tag: %#x", o)
		}
	}
	if a == b || a == c || a == d || b == c || c == d {
		t.Fatalf("entries share ids: %#x %#x %#x %#x", a, b, c, d)
	}
	p, _ := analyzeRows(t, []row{
		initAt(0, 1, 1, siteStore, a),
		initAt(0, 1, 2, siteStore, b),
		useAt(300*ms, 2, 1, siteLookup, a),
		useAt(300*ms, 4, 1, siteLookupB, b),
		useAt(300*ms, 5, 1, siteOtherMap, c),
		disposeAt(302*ms, 3, 1, siteDelete, a),
		disposeAt(302*ms, 6, 1, siteDeleteMap, d),
	}, Options{})
	// The inits (g1) are long before the uses, outside the window: only the
	// delete of entry a pairs, and only with the lookup of entry a.
	wantPairs(t, p, "use-after-dispose 20→30")
}

// A store of nil into an entry (m[k] = nil) is a dispose as a delete is,
// and the store that puts an entry in pairs with a lookup that came right
// after it (use-before-init: delay the store, the lookup finds nothing).
func TestEntriesStoreNilAndInit(t *testing.T) {
	e := abi.EntryObj(0xc000030000, 42)
	p, _ := analyzeRows(t, []row{
		initAt(0, 1, 1, 10, e),       // m[k] = &T{}    (g1)
		useAt(2*ms, 2, 1, 20, e),     // m[k].f         (g2)
		disposeAt(5*ms, 1, 2, 11, e), // m[k] = nil     (g1)
	}, Options{})
	wantPairs(t, p, "use-before-init 10→20", "use-after-dispose 20→11")
}

// Two comma-ok lookups of one entry, each followed by its goroutine's
// delete, are a check-then-act pair; lookups of two keys are not.
func TestEntriesCheckThenAct(t *testing.T) {
	const m = 0xc000040000
	a, b := abi.EntryObj(m, 1), abi.EntryObj(m, 2)
	p, _ := analyzeRows(t, []row{
		checkAt(0, 1, 1, 40, a),      // if v, ok := m[k]; ok { (g1)
		disposeAt(1*ms, 1, 2, 41, a), //   delete(m, k); close(v.ch)
		checkAt(3*ms, 2, 1, 40, a),   // the same in g2: finds nothing
		checkAt(3*ms, 3, 1, 40, b),   // g3 looks another key up
		disposeAt(4*ms, 3, 2, 41, b), //   and deletes it
		checkAt(5*ms, 4, 1, 40, b),   // g4: the other key again
	}, Options{})
	wantPairs(t, p, "check-then-act 40→40")
	if got := len(p.Location(40).Pairs); got != 1 {
		t.Fatalf("pairs at the lookup: %d, want 1", got)
	}
}
