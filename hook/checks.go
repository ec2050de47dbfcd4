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
	switch m {
	case uint32(ModeDetect):
		inject.At(site, obj)
	case uint32(ModeBasic):
		inject.Access(site, obj, abi.OpCheck) // not a near-miss access; no check-then-act pairs online
	default:
		record.Add(site, obj, abi.OpCheck)
	}
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
	switch m {
	case uint32(ModeDetect):
		inject.At(site, obj)
		inject.Closing(site, obj)
	case uint32(ModeBasic):
		inject.Access(site, obj, abi.OpDispose)
		inject.Closing(site, obj)
	default:
		record.Add(site, obj, abi.OpDispose)
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
	switch m {
	case uint32(ModeDetect):
		inject.At(site, obj)
		inject.Sending(site, obj)
	case uint32(ModeBasic):
		inject.Access(site, obj, abi.OpUse)
		inject.Sending(site, obj)
	default:
		record.Add(site, obj, abi.OpUse)
	}
}
