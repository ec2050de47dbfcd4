package inject

import (
	"sync/atomic"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/lcc"
)

// Recovered panics (docs/report-format.md, "Recovered panics"). A test
// that recovers a panic — a regression test wrapping the racy call in
// defer/recover and failing with t.Errorf — leaves no crash output. So the
// hooks of the operations that panic with a MEMORDER panic tell the
// runtime, after their event (and its delay) and before the operation,
// whether it is about to panic, and the runtime logs an abi.EvPanic
// record. Only certain panics are logged: close of a nil or closed
// channel, send on a closed channel, and — at the sites the plan mentions
// (AtDeref) — a nil dereference or a nil map write.

// closedOff is the offset of the closed flag in the runtime's channel
// header (runtime.hchan: qcount, dataqsiz uint; buf pointer; elemsize
// uint16; closed uint32), or 0 when probing did not confirm it, which
// turns the channel checks off.
var closedOff = probeClosedOffset()

func probeClosedOffset() uintptr {
	w := unsafe.Sizeof(uintptr(0))
	off := (3*w + 2 + 3) &^ 3
	read := func(p unsafe.Pointer) uint32 { return atomic.LoadUint32((*uint32)(unsafe.Add(p, off))) }
	open0, open1 := make(chan int), make(chan struct{}, 3)
	shut0, shut1 := make(chan int), make(chan struct{}, 3)
	close(shut0)
	close(shut1)
	if read(chanPtr(open0)) != 0 || read(chanPtr(open1)) != 0 || read(chanPtr(shut0)) != 1 || read(chanPtr(shut1)) != 1 {
		return 0
	}
	return off
}

func chanPtr[T any](ch chan T) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&ch)) }

// chanClosed reports whether the channel obj (its runtime header) is
// closed; false when the layout is unknown.
func chanClosed(obj unsafe.Pointer) bool {
	return closedOff != 0 && atomic.LoadUint32((*uint32)(unsafe.Add(obj, closedOff))) != 0
}

// Closing is called in detection runs right before close(ch) at site (obj
// is the channel),
// after the site's event: it logs an abi.EvPanic record when the close
// will panic.
func Closing(site uint32, obj unsafe.Pointer) {
	switch {
	case obj == nil:
		notePanic(site, obj, abi.PanicCloseNil)
	case chanClosed(obj):
		notePanic(site, obj, abi.PanicCloseClosed)
	}
}

// Sending is called in detection runs right before a send on the channel
// obj at site,
// after the site's event: it logs an abi.EvPanic record when the send
// will panic.
func Sending(site uint32, obj unsafe.Pointer) {
	if obj != nil && chanClosed(obj) {
		notePanic(site, obj, abi.PanicSendClosed)
	}
}

// AtDeref is At for a use that dereferences the slot obj (kind
// abi.UseDeref) or writes the map in it (abi.UseMapWrite). At a site the
// plan does not mention it costs what At costs; at one it mentions, after
// the event (and its delay), a nil value in the slot is logged as the
// panic the use is about to cause.
func AtDeref(site uint32, obj unsafe.Pointer, kind uint8) {
	l := table.find(site)
	if l == nil {
		return
	}
	if l.on.Load() != 0 {
		eng.at(l, uintptr(obj))
	}
	if obj != nil && atomic.LoadUintptr((*uintptr)(obj)) == 0 {
		k := abi.PanicNilDeref
		if kind == abi.UseMapWrite {
			k = abi.PanicNilMap
		}
		notePanic(site, obj, k)
	}
}

//go:noinline
func notePanic(site uint32, obj unsafe.Pointer, kind abi.PanicKind) {
	if e := eng; e != nil {
		e.logPanic(site, lcc.Goid(), uintptr(obj), kind)
	}
}

// logPanic logs that goroutine g is about to panic at site.
func (e *engine) logPanic(site uint32, g uint64, obj uintptr, kind abi.PanicKind) {
	e.panics.Add(1)
	if e.log == nil || e.log.panics.Add(1) > abi.MaxPanicRecords {
		return
	}
	e.log.write(newRec(abi.EvPanic, e.clk.now()).uint(abi.KeySite, uint64(site)).uint(abi.KeyG, g).
		uint(abi.KeyObj, uint64(obj)).str(abi.KeyKind, string(kind)))
}
