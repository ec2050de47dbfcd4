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
func EntryInit[K comparable](site uint32, m unsafe.Pointer, k K) {
	if md := mode.Load(); md != 0 {
		event(md, site, entryObj(m, k), abi.OpInit)
	}
}

// EntryDispose is Dispose for the entry m[k]: it is about to be deleted,
// or nil stored into it.
func EntryDispose[K comparable](site uint32, m unsafe.Pointer, k K) {
	if md := mode.Load(); md != 0 {
		event(md, site, entryObj(m, k), abi.OpDispose)
	}
}

// EntryStore is Store for the entry m[k]: a value whose nil-ness is known
// only at run time is about to be stored.
func EntryStore[K comparable](site uint32, m unsafe.Pointer, k K, isNil bool) {
	if md := mode.Load(); md != 0 {
		op := abi.OpInit
		if isNil {
			op = abi.OpDispose
		}
		event(md, site, entryObj(m, k), op)
	}
}

// EntryUse is Use for the entry m[k]: it is about to be looked up, and
// the value it holds is (or will be) dereferenced.
func EntryUse[K comparable](site uint32, m unsafe.Pointer, k K) {
	if md := mode.Load(); md != 0 {
		event(md, site, entryObj(m, k), abi.OpUse)
	}
}

// EntryCheck is Check for the entry m[k]: a comma-ok lookup of it has
// just told the goroutine whether it is there.
func EntryCheck[K comparable](site uint32, m unsafe.Pointer, k K) {
	if md := mode.Load(); md != 0 {
		event(md, site, entryObj(m, k), abi.OpCheck)
	}
}

// entryObj is the object of the entry m[k] as the hooks pass objects on.
// The id is not an address and is never dereferenced: it has abi.EntryTag
// set, which puts it outside every heap arena, so the garbage collector
// ignores it. Where a pointer cannot hold 64 bits the entry's object is
// the map itself.
func entryObj[K comparable](m unsafe.Pointer, k K) unsafe.Pointer {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return m
	}
	id := entryID(m, k)
	return *(*unsafe.Pointer)(unsafe.Pointer(&id))
}

// entryID is the object id of the entry m[k] (abi.EntryObj). It does not
// allocate, and k does not escape: maphash.Comparable would move what a
// key points to onto the heap (it keeps a pointer's hash stable across
// stack moves), and that would change the allocations of the user's code
// even with the hooks off. A key that points into a goroutine's stack
// cannot be in a map another goroutine reads, so its hash need not be
// stable.
func entryID[K comparable](m unsafe.Pointer, k K) uint64 {
	kp := (*K)(noescape(unsafe.Pointer(&k)))
	return abi.EntryObj(uintptr(m), maphash.Comparable(entrySeed, *kp))
}

// noescape hides p from escape analysis, as the runtime's noescape does:
// a uintptr holds no pointer the analysis follows. No call comes between
// the conversion and the load, so the stack cannot move in between.
func noescape(p unsafe.Pointer) unsafe.Pointer {
	x := uintptr(p)
	return *(*unsafe.Pointer)(unsafe.Pointer(&x))
}
