package hook

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/inject"
	"github.com/memorder/wafl/lcc"
	"github.com/memorder/wafl/record"
)

// Mode is what the hooks do.
type Mode uint32

const (
	ModeOff    Mode = 0 // hooks return at once (WAFL_MODE unset)
	ModeRecord Mode = 1 // events go to the recorder (WAFL_MODE=record)
	ModeDetect Mode = 2 // hooks call inject.At (WAFL_MODE=detect)
	// ModeBasic: a detection run in basic mode (WAFL_ABLATE=basic): hooks
	// call inject.Access with the event's op, for online near-miss
	// detection.
	ModeBasic Mode = 3
	// ModeDetectRecord: a detection run that also records its events
	// (WAFL_MODE=detect-record; plans that keep learning).
	ModeDetectRecord Mode = 4
)

func (m Mode) String() string {
	switch m {
	case ModeOff:
		return "off"
	case ModeRecord:
		return "record"
	case ModeDetect:
		return "detect"
	case ModeBasic:
		return "basic"
	case ModeDetectRecord:
		return "detect-record"
	}
	return fmt.Sprintf("Mode(%d)", uint32(m))
}

// mode is loaded by every hook: the off path is this load and a branch.
var mode atomic.Uint32

// CurrentMode returns the hooks' mode.
func CurrentMode() Mode { return Mode(mode.Load()) }

func init() {
	if _, ok := os.LookupEnv(abi.EnvNetNS); ok {
		os.Unsetenv(abi.EnvNetNS)
		if err := loopbackUp(); err != nil {
			fmt.Fprintf(os.Stderr, "wafl runtime: bringing up loopback in a network namespace of its own: %v\n", err)
			os.Exit(abi.ExitNetNS)
		}
	}
	m := os.Getenv(abi.EnvMode)
	if m == "" {
		return
	}
	// A test that re-executes its own binary (the helper-process
	// pattern) must not record into this process's spill file or run
	// detection with this run's plan: children run with the hooks off.
	os.Unsetenv(abi.EnvMode)
	trace := os.Getenv(abi.EnvTrace)
	os.Unsetenv(abi.EnvTrace)
	if os.Getenv(abi.EnvThin) == "off" {
		record.NoThinning()
	}
	os.Unsetenv(abi.EnvThin)
	if m == abi.ModeDetect || m == abi.ModeDetectRecord {
		if err := setupDetect(); err != nil {
			fmt.Fprintf(os.Stderr, "wafl: detect: %v\n", err)
			os.Exit(abi.ExitSetup)
		}
		if m == abi.ModeDetectRecord && mode.Load() == uint32(ModeDetect) {
			// The detection run records too (a learning run): a
			// recorder that cannot start is a setup failure of the run.
			if trace == "" {
				fmt.Fprintf(os.Stderr, "wafl: detect: %s=%s needs %s\n", abi.EnvMode, m, abi.EnvTrace)
				os.Exit(abi.ExitSetup)
			}
			if err := record.Start(trace); err != nil {
				fmt.Fprintf(os.Stderr, "wafl: detect: %v\n", err)
				os.Exit(abi.ExitSetup)
			}
			mode.Store(uint32(ModeDetectRecord))
		}
		return
	}
	if err := setupRecord(m, trace); err != nil {
		fmt.Fprintf(os.Stderr, "wafl runtime: %v\n", err)
		os.Exit(abi.ExitRecordSetup)
	}
}

// setupDetect starts a detection run: package inject reads the rest of
// its environment and loads the plan.
func setupDetect() error {
	lcc.Enable()
	if err := inject.Setup(); err != nil {
		return err
	}
	if inject.Basic() {
		mode.Store(uint32(ModeBasic))
		return nil
	}
	mode.Store(uint32(ModeDetect))
	return nil
}

// setupRecord starts a preparation run for WAFL_MODE=m (any value but
// detect) recording to the spill file trace.
func setupRecord(m, trace string) error {
	if m != abi.ModeRecord {
		return fmt.Errorf("%s=%q: want %s, %s or nothing", abi.EnvMode, m, abi.ModeRecord, abi.ModeDetect)
	}
	if trace == "" {
		return fmt.Errorf("%s=%s needs %s, the spill file to write", abi.EnvMode, abi.ModeRecord, abi.EnvTrace)
	}
	return startRecording(trace)
}

// startRecording starts the recorder and turns the hooks on.
func startRecording(path string) error {
	if err := record.Start(path); err != nil {
		return err
	}
	lcc.Enable()
	mode.Store(uint32(ModeRecord))
	return nil
}

// Init is called before a non-nil value is stored into slot.
func Init(site uint32, slot unsafe.Pointer) {
	if m := mode.Load(); m != 0 {
		event(m, site, slot, abi.OpInit)
	}
}

// Dispose is called before nil is stored into slot or before the channel
// slot is closed.
func Dispose(site uint32, slot unsafe.Pointer) {
	if m := mode.Load(); m != 0 {
		event(m, site, slot, abi.OpDispose)
	}
}

// Store is called before a store whose nil-ness is known only at run time.
func Store(site uint32, slot unsafe.Pointer, isNil bool) {
	if m := mode.Load(); m != 0 {
		storeEvent(m, site, slot, isNil)
	}
}

//go:noinline
func storeEvent(m uint32, site uint32, slot unsafe.Pointer, isNil bool) {
	op := abi.OpInit
	if isNil {
		op = abi.OpDispose
	}
	event(m, site, slot, op)
}

// Use is called before the value in slot is dereferenced.
func Use(site uint32, slot unsafe.Pointer) {
	if m := mode.Load(); m != 0 {
		event(m, site, slot, abi.OpUse)
	}
}

// event is the out-of-line part of every event hook: the mode switch.
//
//go:noinline
func event(m uint32, site uint32, slot unsafe.Pointer, op abi.Op) {
	switch m {
	case uint32(ModeDetect):
		inject.At(site, slot)
	case uint32(ModeBasic):
		inject.Access(site, slot, op)
	case uint32(ModeDetectRecord):
		inject.At(site, slot)
		record.Add(site, slot, op)
	default:
		record.Add(site, slot, op)
	}
}

// Fork is the parent side of a func value handed to another package (a
// callback); see lcc.Fork.
func Fork() lcc.Token { return lcc.Fork() }

// Go is the parent side of an instrumented go statement at site: Fork,
// and while recording the go row (record.AddGo), written whether or not
// the child ever runs. Off, it costs what Fork costs: a load and a branch.
func Go(site uint32) lcc.Token {
	if mode.Load() == 0 {
		return lcc.Token{}
	}
	return goFork(site)
}

// goFork is Go's out-of-line part.
//
//go:noinline
func goFork(site uint32) lcc.Token {
	t := lcc.Fork()
	if m := mode.Load(); t.Parent != 0 && (m == uint32(ModeRecord) || m == uint32(ModeDetectRecord)) {
		record.AddGo(site, t)
	}
	return t
}

// Adopt is the first thing the child of an instrumented go statement does.
// While recording it writes the fork row (record.AddFork).
func Adopt(t lcc.Token) {
	if t.Parent != 0 {
		adopt(t)
	}
}

func adopt(t lcc.Token) {
	e, ok := lcc.Adopt(t)
	if !ok {
		return
	}
	switch mode.Load() {
	case uint32(ModeRecord), uint32(ModeDetectRecord):
		parented[e.Child&parentedMask].Store(e.Child)
		record.AddFork(e)
	case uint32(ModeBasic):
		inject.Forked(e)
	}
}

// parented remembers, direct-mapped by goroutine id, goroutines that have
// adopted a token, so that a callback run again on the same goroutine (a
// pool worker, a timer goroutine running several callbacks) writes no
// second fork row: a goroutine has one parent. A collision forgets the
// older goroutine, which costs one duplicate row the analyzer drops.
var parented [1 << 12]atomic.Uint64

const parentedMask = 1<<12 - 1

// AdoptCallback is the first thing a func value that instrumented code
// handed to uninstrumented code does when it runs (instrument's funcctx):
// on a goroutine other than the one that handed it over, it adopts the
// token taken then, like the child of an instrumented go statement. On the
// same goroutine (a synchronous callback) it does nothing.
func AdoptCallback(t lcc.Token) {
	if t.Parent != 0 {
		adoptCallback(t)
	}
}

//go:noinline
func adoptCallback(t lcc.Token) {
	if g := lcc.Goid(); t.Parent != g && parented[g&parentedMask].Load() != g {
		adopt(t)
	}
}

// Recording reports whether the hooks record (a preparation run).
func Recording() bool { return mode.Load() == uint32(ModeRecord) }

// TestBegin marks, while recording, that the calling goroutine starts
// running the top-level test name; TestEnd that it and all its subtests
// ended (the generated test prologue calls it from t.Cleanup). wafl
// splits a package's preparation run per test by these marks and by fork
// ancestry (record/split). Once per test: not on the events' path.
func TestBegin(name string) {
	if Recording() {
		record.Mark(abi.OpTestBegin, abi.TestID(name), 0)
	}
}

// Subtest marks, while recording, that the calling goroutine starts
// running the subtest name (t.Name()): the generated start of every
// function passed to t.Run calls it, so that wafl knows which subtests
// reach which sites and can run only those (docs/algorithm.md, "Runs of
// some subtests"). Once per subtest: not on the events' path.
func Subtest(name string) {
	if Recording() {
		record.Subtest(abi.TestID(name))
	}
}

// TestEnd: see TestBegin. failed says the test failed.
func TestEnd(name string, failed bool) {
	if Recording() {
		var site uint32
		if failed {
			site = 1
		}
		record.Mark(abi.OpTestEnd, abi.TestID(name), site)
	}
}

// Finish ends the run: while recording it turns the hooks off, flushes
// every buffered event and closes the spill file (record.Stop); while
// detecting it calls inject.Finish. It is idempotent, safe to call from
// any goroutine, and returns only once the work is done, also when
// another goroutine got there first.
func Finish() {
	if mode.Load() == uint32(ModeDetectRecord) {
		// Drain the delays first: the delayed goroutines' accesses
		// are recorded; then stop recording and go on detecting.
		detectOnce.Do(inject.Finish)
		mode.CompareAndSwap(uint32(ModeDetectRecord), uint32(ModeDetect))
	}
	mode.CompareAndSwap(uint32(ModeRecord), uint32(ModeOff))
	if err := record.Stop(); err != nil && reported.CompareAndSwap(false, true) {
		fmt.Fprintf(os.Stderr, "wafl runtime: %v\n", err)
	}
	if m := Mode(mode.Load()); m == ModeDetect || m == ModeBasic {
		detectOnce.Do(inject.Finish)
	}
}

var (
	// reported is set once Finish has printed the recorder's error.
	reported   atomic.Bool
	detectOnce sync.Once
)

// Exit replaces os.Exit in instrumented files: Finish, then os.Exit(code).
func Exit(code int) {
	Finish()
	os.Exit(code)
}
