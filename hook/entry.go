package hook

import (
	"hash/maphash"
	"unsafe"

	"github.com/memorder/wafl/abi"
)

// Map entries (docs/instrumentation.md, "Map entries"). The helpers
// generated into an instrumented package call these for an entry m[k] of
// a Go map (m is the map header's address) or of a sync.Map (m is its
// address) from their out-of-line part only: with the hooks off none of
// this runs. The event's object is the entry's id (abi.EntryObj): the
// map's identity and a hash of the key, never an address, so it is handed
// on to record and inject only by value and never dereferenced.

// entrySeed is the process's key hash seed: every package of the test
// binary hashes keys with it, so that an entry has one id in all of them.
var entrySeed = maphash.MakeSeed()

// EntryInit is Init for the entry m[k]: a non-nil value is about to be
// stored into it.
func EntryInit(site uint32, m, k any) {
	if md := mode.Load(); md != 0 {
		event(md, site, entryObj(m, k), abi.OpInit)
	}
}

// EntryDispose is Dispose for the entry m[k]: it is about to be deleted,
// or nil stored into it.
func EntryDispose(site uint32, m, k any) {
	if md := mode.Load(); md != 0 {
		event(md, site, entryObj(m, k), abi.OpDispose)
	}
}

// EntryStore is Store for the entry m[k]: the value v is about to be
// stored; it disposes of the entry when v is nil or holds a nil pointer,
// map, channel or func, and inits it otherwise.
func EntryStore(site uint32, m, k, v any) {
	if md := mode.Load(); md != 0 {
		op := abi.OpInit
		if v == nil || dataWord(&v) == nil {
			op = abi.OpDispose
		}
		event(md, site, entryObj(m, k), op)
	}
}

// EntryUse is Use for the entry m[k]: it is about to be looked up, and
// the value it holds is (or will be) dereferenced.
func EntryUse(site uint32, m, k any) {
	if md := mode.Load(); md != 0 {
		event(md, site, entryObj(m, k), abi.OpUse)
	}
}

// EntryCheck is Check for the entry m[k]: a comma-ok lookup of it has
// just told the goroutine whether it is there.
func EntryCheck(site uint32, m, k any) {
	if md := mode.Load(); md != 0 {
		event(md, site, entryObj(m, k), abi.OpCheck)
	}
}

// dataWord is the data word of the interface *v: the map, channel, func
// or pointer itself when v holds one.
func dataWord(v *any) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(v))[1] }

// entryObj is the object of the entry m[k] as the hooks pass objects on;
// m holds the map (its data word is the map header's address) or a
// *sync.Map. The id is not an address and is never dereferenced: it has
// abi.EntryTag set, which puts it outside every heap arena, so the garbage
// collector ignores it. Where a pointer cannot hold 64 bits the entry's
// object is the map itself.
func entryObj(m, k any) unsafe.Pointer {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return dataWord(&m)
	}
	id := entryID(dataWord(&m), k)
	return *(*unsafe.Pointer)(unsafe.Pointer(&id))
}

// entryID is the object id of the entry of key k in the map whose
// identity is m (abi.EntryObj). Every site hashes the key as an
// interface, so a key has one hash whatever the static type it was looked
// up with (a map's key type, a sync.Map's any). It does not allocate, and
// k does not escape: maphash.Comparable would move what a key points to
// onto the heap (it keeps a pointer's hash stable across stack moves),
// and that would change the allocations of the user's code even with the
// hooks off. A key that points into a goroutine's stack cannot be in a
// map another goroutine reads, so its hash need not be stable.
func entryID(m unsafe.Pointer, k any) uint64 {
	kp := (*any)(noescape(unsafe.Pointer(&k)))
	return abi.EntryObj(uintptr(m), maphash.Comparable(entrySeed, *kp))
}

// noescape hides p from escape analysis, as the runtime's noescape does:
// a uintptr holds no pointer the analysis follows. No call comes between
// the conversion and the load, so the stack cannot move in between.
func noescape(p unsafe.Pointer) unsafe.Pointer {
	x := uintptr(p)
	return *(*unsafe.Pointer)(unsafe.Pointer(&x))
}
