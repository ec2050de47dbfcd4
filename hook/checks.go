package hook

import (
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/inject"
	"github.com/memorder/wafl/record"
)

// Check is called right after a goroutine checked whether obj (a
// channel, by a select case with a default; a closed flag, by its load)
// was disposed, before it acts on the answer: the check event of a
// check-then-act pair (docs/algorithm.md). A delay planned here falls
// between the check and the act.
func Check(site uint32, obj unsafe.Pointer) {
	if m := mode.Load(); m != 0 {
		checkEvent(m, site, obj)
	}
}

//go:noinline
func checkEvent(m uint32, site uint32, obj unsafe.Pointer) {
	// Basic mode sees it as an access but forms no check-then-act pair online.
	event(m, site, obj, abi.OpCheck)
}

// Close is called before close(ch): Dispose's event, and in detection
// runs, after the event's delay, a note when the close will panic (a
// recovered panic is still seen; inject.Closing).
func Close(site uint32, obj unsafe.Pointer) {
	if m := mode.Load(); m != 0 {
		closeEvent(m, site, obj)
	}
}

//go:noinline
func closeEvent(m uint32, site uint32, obj unsafe.Pointer) {
	event(m, site, obj, abi.OpDispose)
	if injecting(m) {
		inject.Closing(site, obj)
	}
}

// Send is called before a send on ch: Use's event, and in detection runs,
// after the event's delay, a note when the send will panic
// (inject.Sending).
func Send(site uint32, obj unsafe.Pointer) {
	if m := mode.Load(); m != 0 {
		sendEvent(m, site, obj)
	}
}

//go:noinline
func sendEvent(m uint32, site uint32, obj unsafe.Pointer) {
	event(m, site, obj, abi.OpUse)
	if injecting(m) {
		inject.Sending(site, obj)
	}
}

// Deref is Use for a use that dereferences the slot's value (kind
// abi.UseDeref) or writes its map (abi.UseMapWrite): in detection runs,
// after the event and its delay, a nil value at a site the plan mentions
// is noted as the panic about to happen (inject.AtDeref), so that a panic
// user code recovers is still seen.
func Deref(site uint32, slot unsafe.Pointer, kind uint8) {
	if m := mode.Load(); m != 0 {
		derefEvent(m, site, slot, kind)
	}
}

//go:noinline
func derefEvent(m uint32, site uint32, slot unsafe.Pointer, kind uint8) {
	switch m {
	case uint32(ModeDetect):
		inject.AtDeref(site, slot, kind)
	case uint32(ModeBasic):
		inject.Access(site, slot, abi.OpUse)
	case uint32(ModeDetectRecord):
		inject.AtDeref(site, slot, kind)
		record.Add(site, slot, abi.OpUse)
	default:
		record.Add(site, slot, abi.OpUse)
	}
}

// injecting reports whether mode m delays (detection, basic and
// detect-record runs), so that the panic notes after an event's delay
// are made.
func injecting(m uint32) bool {
	return m == uint32(ModeDetect) || m == uint32(ModeBasic) || m == uint32(ModeDetectRecord)
}
