package hook

import (
	"sync"
	"testing"
	"unsafe"

	"github.com/memorder/wafl/abi"
)

type entryKey struct {
	name string
	n    int
}

func mapPtr[M any](m M) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }

// TestEntryID: an entry's id depends on the map and the key only, is
// tagged apart from addresses, and differs between keys and maps.
func TestEntryID(t *testing.T) {
	m1 := map[string]*int{}
	m2 := map[string]*int{}
	p1, p2 := mapPtr(m1), mapPtr(m2)
	a := "peer-1"
	b := string([]byte("peer-1")) // equal, other backing array
	if entryID(p1, a) != entryID(p1, b) {
		t.Error("equal string keys of one map have different ids")
	}
	ids := map[uint64]string{}
	for _, c := range []struct {
		name string
		id   uint64
	}{
		{"m1[peer-1]", entryID(p1, a)},
		{"m1[peer-2]", entryID(p1, "peer-2")},
		{"m2[peer-1]", entryID(p2, a)},
		{"m1[1]", entryID(p1, 1)},
		{"m1[2]", entryID(p1, 2)},
		{"m1[{a 1}]", entryID(p1, entryKey{"a", 1})},
		{"m1[{a 2}]", entryID(p1, entryKey{"a", 2})},
		{"nil[peer-1]", entryID(nil, a)},
	} {
		if !abi.IsEntry(c.id) {
			t.Errorf("%s: id %#x has no entry tag", c.name, c.id)
		}
		if o, dup := ids[c.id]; dup {
			t.Errorf("%s and %s share id %#x", c.name, o, c.id)
		}
		ids[c.id] = c.name
	}
	if entryID(p1, entryKey{"a", 1}) != entryID(p1, entryKey{string([]byte("a")), 1}) {
		t.Error("equal struct keys have different ids")
	}
	var ia, ib any = "x", string([]byte("x"))
	if entryID(p1, ia) != entryID(p1, ib) {
		t.Error("equal interface keys have different ids")
	}
	x := new(int)
	if abi.IsEntry(uint64(uintptr(unsafe.Pointer(x)))) {
		t.Errorf("an address %p looks like an entry id", x)
	}
	if got := uint64(uintptr(entryObj(m1, a))); got != entryID(p1, a) {
		t.Errorf("entryObj = %#x, want the id %#x", got, entryID(p1, a))
	}
	var sm sync.Map
	if got := uint64(uintptr(entryObj(&sm, a))); got != entryID(unsafe.Pointer(&sm), a) {
		t.Errorf("entryObj of a sync.Map entry = %#x, want %#x", got, entryID(unsafe.Pointer(&sm), a))
	}
}

// TestEntryNoAllocs: hashing a key allocates nothing, for string, integer,
// struct, pointer and interface keys, and an entry hook does not make its
// key escape (instrumenting m[&local] must not move local to the heap).
func TestEntryNoAllocs(t *testing.T) {
	m := map[string]*int{}
	p := mapPtr(m)
	k := "some-key"
	var sink uint64
	var iface any = 42
	if n := testing.AllocsPerRun(1000, func() {
		sink += entryID(p, k)
		sink += entryID(p, 7)
		sink += entryID(p, entryKey{k, 3})
		sink += entryID(p, iface)
	}); n != 0 {
		t.Fatalf("entryID allocates %v times per run, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		local := 5
		sink += entryID(p, &local)
	}); n != 0 {
		t.Fatalf("entryID of a pointer key allocates %v times per run (the key escapes), want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		local := 5
		EntryUse(1, m, &local)
		EntryCheck(2, m, k)
	}); n != 0 {
		t.Fatalf("entry hooks with the hooks off allocate %v times per run, want 0", n)
	}
	start(t, "")
	for range 3 * 2048 {
		EntryUse(1, m, k)
	}
	var sm sync.Map
	if n := testing.AllocsPerRun(20_000, func() {
		local := 5
		EntryInit(1, m, k)
		EntryUse(2, m, &local)
		EntryStore(3, m, 9, (*int)(nil))
		EntryDispose(4, m, k)
		EntryCheck(5, m, iface)
		EntryStore(6, &sm, k, &local)
	}); n != 0 {
		t.Fatalf("recording entry hooks allocate %v times per run, want 0", n)
	}
	_ = sink
}

// TestEntryRecord: the entry hooks record their ops on the entry's id.
func TestEntryRecord(t *testing.T) {
	path := start(t, "")
	m := map[string]*int{}
	p := mapPtr(m)
	EntryInit(1, m, "a")
	EntryUse(2, m, "a")
	EntryStore(3, m, "a", (*int)(nil))
	EntryStore(4, m, "a", new(int))
	EntryDispose(5, m, "a")
	EntryCheck(6, m, "b")
	EntryStore(7, m, "a", nil)
	EntryStore(8, m, "a", any(nil))
	EntryStore(9, m, "a", 0)
	Finish()
	evs := readSpill(t, path)
	want := []abi.Op{abi.OpInit, abi.OpUse, abi.OpDispose, abi.OpInit, abi.OpDispose, abi.OpCheck, abi.OpDispose, abi.OpDispose, abi.OpInit}
	var got []abi.RawEvent
	for _, e := range evs {
		if e.Op.Sited() {
			got = append(got, e)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("recorded %d events, want %d: %+v", len(got), len(want), got)
	}
	a, b := entryID(p, "a"), entryID(p, "b")
	for i, e := range got {
		obj := a
		if i == 5 {
			obj = b
		}
		if e.Op != want[i] || e.Site != uint32(i+1) || e.Obj != obj {
			t.Errorf("event %d: %v site %d obj %#x, want %v site %d obj %#x", i, e.Op, e.Site, e.Obj, want[i], i+1, obj)
		}
	}
}

func BenchmarkEntryID(b *testing.B) {
	m := map[string]*int{}
	p := mapPtr(m)
	var sink uint64
	for b.Loop() {
		sink += entryID(p, "peer-17")
	}
	_ = sink
}
