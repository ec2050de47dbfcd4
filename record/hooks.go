package record

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/memorder/wafl/inject"
	"github.com/memorder/wafl/lcc"
)

// Mode is what the hooks do.
type Mode uint32

const (
	ModeOff    Mode = 0 // hooks return at once (WAFL_MODE unset)
	ModeRecord Mode = 1 // events go to the spill file (WAFL_MODE=record)
	ModeDetect Mode = 2 // hooks call inject.At (WAFL_MODE=detect)
)

func (m Mode) String() string {
	switch m {
	case ModeOff:
		return "off"
	case ModeRecord:
		return "record"
	case ModeDetect:
		return "detect"
	}
	return fmt.Sprintf("Mode(%d)", uint32(m))
}

// mode is loaded by every hook: the off path is this load and a branch.
var mode atomic.Uint32

// CurrentMode returns the hooks' mode.
func CurrentMode() Mode { return Mode(mode.Load()) }

func init() {
	m := os.Getenv("WAFL_MODE")
	if err := setup(m, os.Getenv("WAFL_TRACE")); err != nil {
		fmt.Fprintf(os.Stderr, "wafl runtime: %v\n", err)
		os.Exit(2)
	}
	if m == "record" {
		// A test that re-executes its own binary (the helper-process
		// pattern) must not truncate and interleave this process's spill
		// file: children run with the hooks off.
		os.Unsetenv("WAFL_MODE")
		os.Unsetenv("WAFL_TRACE")
	}
}

func setup(m, trace string) error {
	switch m {
	case "":
		return nil
	case "record":
		if trace == "" {
			return fmt.Errorf("WAFL_MODE=record needs WAFL_TRACE, the spill file to write")
		}
		return StartRecording(trace)
	case "detect":
		lcc.Enable()
		if inject.Setup() {
			mode.Store(uint32(ModeDetect))
		}
		return nil
	}
	return fmt.Errorf("WAFL_MODE=%q: want record, detect or nothing", m)
}

// Init is called before a non-nil value is stored into slot.
func Init(site uint32, slot unsafe.Pointer) {
	if m := mode.Load(); m != 0 {
		hook(m, site, slot, OpInit)
	}
}

// Dispose is called before nil is stored into slot or before the channel
// slot is closed.
func Dispose(site uint32, slot unsafe.Pointer) {
	if m := mode.Load(); m != 0 {
		hook(m, site, slot, OpDispose)
	}
}

// Store is called before a store whose nil-ness is known only at run time.
func Store(site uint32, slot unsafe.Pointer, isNil bool) {
	if m := mode.Load(); m != 0 {
		storeHook(m, site, slot, isNil)
	}
}

//go:noinline
func storeHook(m uint32, site uint32, slot unsafe.Pointer, isNil bool) {
	op := OpInit
	if isNil {
		op = OpDispose
	}
	hook(m, site, slot, op)
}

// Use is called before the value in slot is dereferenced.
func Use(site uint32, slot unsafe.Pointer) {
	if m := mode.Load(); m != 0 {
		hook(m, site, slot, OpUse)
	}
}

// hook is the out-of-line part of every event hook.
//
//go:noinline
func hook(m uint32, site uint32, slot unsafe.Pointer, op Op) {
	if m == uint32(ModeDetect) {
		inject.At(site, slot)
		return
	}
	r := active.Load()
	if r == nil {
		return
	}
	g, c := lcc.Current()
	t := nanotime()
	// The common case of recorder.add, written out here so that an event
	// costs one call: reserve a slot in the shard's current buffer, fill
	// it, publish it. Anything else (no buffer, full, sealed) goes to add.
	si := g % numShards
	if b := r.shards[si].cur.Load(); b != nil {
		s := b.state.Load()
		if s&^countMask == (si+1)<<ownerShift && s&countMask < bufEvents && b.state.CompareAndSwap(s, s+1) {
			e := &b.ev[s&countMask]
			e.time = t
			e.g = g
			e.obj = uint64(uintptr(slot))
			e.clock = c
			e.site = site
			e.op = op
			b.done.Add(1)
			return
		}
	}
	r.add(g, t, g, uint64(uintptr(slot)), c, site, op)
}

// Fork is the parent side of an instrumented go statement; see lcc.Fork.
func Fork() lcc.Token { return lcc.Fork() }

// Adopt is the first thing the child of an instrumented go statement does.
// While recording it writes the fork row (g = parent, clock = parent's
// counter at the fork, obj = child, site 0).
func Adopt(t lcc.Token) {
	if t.Parent != 0 {
		adopt(t)
	}
}

func adopt(t lcc.Token) {
	e, ok := lcc.Adopt(t)
	if !ok || mode.Load() != uint32(ModeRecord) {
		return
	}
	if r := active.Load(); r != nil {
		r.add(e.Child, nanotime(), e.Parent, e.Child, e.Clock, 0, OpFork)
	}
}

// Finish ends the run: while recording it flushes every buffered event and
// closes the spill file; while detecting it calls inject.Finish. It is
// idempotent, safe to call from any goroutine, and returns only once the
// work is done, also when another goroutine got there first.
func Finish() {
	if r := active.Load(); r != nil {
		if err := StopRecording(); err != nil && r.reported.CompareAndSwap(false, true) {
			fmt.Fprintf(os.Stderr, "wafl runtime: %v\n", err)
		}
	}
	if Mode(mode.Load()) == ModeDetect {
		detectOnce.Do(inject.Finish)
	}
}

var detectOnce sync.Once

// Exit replaces os.Exit in instrumented files: Finish, then os.Exit(code).
func Exit(code int) {
	Finish()
	os.Exit(code)
}
