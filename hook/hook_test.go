package hook

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/lcc"
	"github.com/memorder/wafl/record"
)

func readSpill(t *testing.T, path string) []abi.RawEvent {
	t.Helper()
	evs, err := trace.ReadRawFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// start records to a temporary file (or path, if given) with the hooks on,
// as init does for WAFL_MODE=record; the recording ends with the test.
func start(tb testing.TB, path string) string {
	tb.Helper()
	if path == "" {
		path = filepath.Join(tb.TempDir(), "trace.raw")
	}
	if err := startRecording(path); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		Finish()
		lcc.Disable()
	})
	return path
}

// TestHooksRecord checks what each hook records, that Finish turns the
// hooks off, and that events after Finish are dropped.
func TestHooksRecord(t *testing.T) {
	path := start(t, "")
	if CurrentMode() != ModeRecord {
		t.Fatalf("mode %v, want record", CurrentMode())
	}
	x := new(int)
	p := unsafe.Pointer(x)
	parent := lcc.Goid()
	Init(1, p)
	Use(2, p)
	Store(3, p, false)
	Store(4, p, true)
	Dispose(5, p)
	tok := Fork()
	var child uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		Adopt(tok)
		child = lcc.Goid()
		Use(6, p)
	}()
	wg.Wait()
	var wg2 sync.WaitGroup
	for range 8 {
		wg2.Add(1)
		go func() { defer wg2.Done(); Finish() }()
	}
	wg2.Wait()
	if CurrentMode() != ModeOff {
		t.Fatalf("mode after Finish = %v, want off", CurrentMode())
	}
	Use(7, p) // after Finish: dropped, no panic

	obj := uint64(uintptr(p))
	want := []abi.RawEvent{
		{G: parent, Obj: obj, Clock: 1, Site: 1, Op: abi.OpInit},
		{G: parent, Obj: obj, Clock: 1, Site: 2, Op: abi.OpUse},
		{G: parent, Obj: obj, Clock: 1, Site: 3, Op: abi.OpInit},
		{G: parent, Obj: obj, Clock: 1, Site: 4, Op: abi.OpDispose},
		{G: parent, Obj: obj, Clock: 1, Site: 5, Op: abi.OpDispose},
		{G: parent, Obj: child, Clock: 1, Op: abi.OpFork},
		{G: child, Obj: obj, Clock: 1, Site: 6, Op: abi.OpUse},
	}
	var got []abi.RawEvent
	for _, e := range readSpill(t, path) {
		e.Time = 0
		got = append(got, e)
	}
	// The parent's and the child's shards may be written in either order.
	if len(got) != len(want) {
		t.Fatalf("recorded %+v, want %+v", got, want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("missing %+v in %+v", w, got)
		}
	}
}

// TestAdoptCallback checks that a callback run on its creator's goroutine
// writes no fork row, that one run on another goroutine writes one, and
// that running callbacks again on that goroutine writes no second one.
func TestAdoptCallback(t *testing.T) {
	path := start(t, "")
	parent := lcc.Goid()
	AdoptCallback(Fork()) // synchronous callback: no row
	tok1, tok2 := Fork(), Fork()
	var child uint64
	done := make(chan struct{})
	go func() { // the worker goroutine of some uninstrumented pool
		defer close(done)
		child = lcc.Goid()
		AdoptCallback(tok1)
		AdoptCallback(tok2) // a second task on the same worker: no row
	}()
	<-done
	AdoptCallback(lcc.Token{}) // tracking was off at the hand-over
	Finish()
	var forks []abi.RawEvent
	for _, e := range readSpill(t, path) {
		if e.Op == abi.OpFork {
			forks = append(forks, e)
		}
	}
	if len(forks) != 1 || forks[0].G != parent || forks[0].Obj != child || forks[0].Clock != tok1.Clock {
		t.Fatalf("fork rows %+v, want one from %d to %d at clock %d", forks, parent, child, tok1.Clock)
	}
}

// TestGoRow checks that a go statement's hook writes the go row in the
// parent when the statement runs, with the clock the child's fork row
// carries, and that a child that never adopts leaves the go row alone.
func TestGoRow(t *testing.T) {
	path := start(t, "")
	parent := lcc.Goid()
	ran := Go(11)
	var child uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		Adopt(ran)
		child = lcc.Goid()
	}()
	<-done
	never := Go(12) // a child that never runs before the recording ends
	Finish()
	if ran.Parent != parent || never.Parent != parent || never.Clock != ran.Clock+1 {
		t.Fatalf("tokens %+v, %+v of parent %d", ran, never, parent)
	}
	var gos, forks []abi.RawEvent
	for _, e := range readSpill(t, path) {
		e.Time = 0
		switch e.Op {
		case abi.OpGo:
			gos = append(gos, e)
		case abi.OpFork:
			forks = append(forks, e)
		}
	}
	want := []abi.RawEvent{
		{G: parent, Clock: ran.Clock, Site: 11, Op: abi.OpGo},
		{G: parent, Clock: never.Clock, Site: 12, Op: abi.OpGo},
	}
	if len(gos) != 2 || gos[0] != want[0] || gos[1] != want[1] {
		t.Fatalf("go rows %+v, want %+v", gos, want)
	}
	if len(forks) != 1 || forks[0].G != parent || forks[0].Clock != ran.Clock || forks[0].Obj != child {
		t.Fatalf("fork rows %+v: want one of child %d matching the first go row", forks, child)
	}
	// Off: no token, no row.
	if tok := Go(13); tok != (lcc.Token{}) {
		t.Fatalf("Go with the hooks off = %+v", tok)
	}
}

func TestSetupErrors(t *testing.T) {
	if err := setupRecord("bogus", ""); err == nil || !strings.Contains(err.Error(), `WAFL_MODE="bogus"`) {
		t.Fatalf("setupRecord(bogus): %v", err)
	}
	if err := setupRecord(abi.ModeRecord, ""); err == nil || !strings.Contains(err.Error(), "WAFL_TRACE") {
		t.Fatalf("setupRecord(record, no trace): %v", err)
	}
}

func TestHooksNoAllocs(t *testing.T) {
	start(t, "")
	var x int
	p := unsafe.Pointer(&x)
	for range 3 * 2048 { // warm up: the recorder's buffers allocated and recycled
		Use(1, p)
	}
	if n := testing.AllocsPerRun(20_000, func() {
		Init(1, p)
		Use(2, p)
		Store(3, p, true)
		Adopt(Fork())
		Adopt(Go(4))
	}); n != 0 {
		t.Fatalf("recording hooks allocate %v times per run, want 0", n)
	}
	Finish()
	if n := testing.AllocsPerRun(1000, func() { Use(1, p); Adopt(Fork()); Adopt(Go(4)); AdoptCallback(Fork()) }); n != 0 {
		t.Fatalf("hooks off allocate %v times per run, want 0", n)
	}
}

// TestSubprocessExit runs this test binary with WAFL_MODE=record, as wafl
// does, and checks that init starts the recorder and Exit flushes it, and
// that a run that cannot set up exits at once with the ABI's status.
func TestSubprocessExit(t *testing.T) {
	if os.Getenv("WAFL_RECORD_HELPER") == "1" {
		if os.Getenv(abi.EnvMode) != "" || os.Getenv(abi.EnvTrace) != "" {
			os.Exit(4) // children of a recording process must not record
		}
		var x int
		for i := range 10_000 {
			Use(uint32(i%5+1), unsafe.Pointer(&x))
		}
		tok := Fork()
		done := make(chan struct{})
		go func() { Adopt(tok); Init(9, unsafe.Pointer(&x)); close(done) }()
		<-done
		Exit(3)
	}
	// The helper's 10,000 uses of one slot at 5 sites take a few
	// milliseconds: thinning keeps a few and counts the rest in thinned
	// rows; with WAFL_THIN=off every one is written.
	for _, thin := range []string{"", "off"} {
		path := filepath.Join(t.TempDir(), "sub.raw")
		cmd := exec.Command(os.Args[0], "-test.run=^TestSubprocessExit$")
		cmd.Env = append(os.Environ(), "WAFL_RECORD_HELPER=1", abi.Env(abi.EnvMode, abi.ModeRecord), abi.Env(abi.EnvTrace, path), abi.Env(abi.EnvThin, thin))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("helper: %v, want exit status 3\n%s", err, out)
		}
		evs := readSpill(t, path)
		var uses, thinned, inits, forks int
		for _, e := range evs {
			switch e.Op {
			case abi.OpUse:
				uses++
			case abi.OpThinned:
				thinned += int(e.Obj)
			case abi.OpInit:
				inits++
			case abi.OpFork:
				forks++
			}
		}
		if uses+thinned != 10_000 || inits != 1 || forks != 1 {
			t.Fatalf("WAFL_THIN=%q: helper recorded %d uses (%d more thinned), %d inits, %d forks; want 10000 uses, 1, 1", thin, uses, thinned, inits, forks)
		}
		if thin == "off" && thinned > 0 || thin == "" && uses > 5_000 {
			t.Fatalf("WAFL_THIN=%q: %d uses written, %d thinned", thin, uses, thinned)
		}
	}
	for _, tc := range []struct {
		env  []string
		code int
		want string
	}{
		{[]string{abi.Env(abi.EnvMode, abi.ModeRecord)}, abi.ExitRecordSetup, "wafl runtime: WAFL_MODE=record needs WAFL_TRACE"},
		{[]string{abi.Env(abi.EnvMode, "bogus")}, abi.ExitRecordSetup, `wafl runtime: WAFL_MODE="bogus"`},
		{[]string{abi.Env(abi.EnvMode, abi.ModeDetect)}, abi.ExitSetup, "wafl: detect: WAFL_MODE=detect but WAFL_PLAN is not set"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), tc.env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: %v, want exit status %d and %q\n%s", tc.env, err, tc.code, tc.want, out)
		}
	}
}

func BenchmarkHookOff(b *testing.B) {
	var x int
	p := unsafe.Pointer(&x)
	b.ReportAllocs()
	for b.Loop() {
		Use(1, p)
	}
}

func BenchmarkForkAdoptOff(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Adopt(Fork())
	}
}

func BenchmarkGoAdoptOff(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Adopt(Go(1))
	}
}

// benchStart records to a temporary file, or with null set to /dev/null,
// which isolates the hook's own cost from the writer's disk bandwidth.
func benchStart(b *testing.B, null bool) {
	path := ""
	if null {
		if _, err := os.Stat(os.DevNull); err != nil {
			b.Skip("no", os.DevNull)
		}
		path = os.DevNull
	}
	start(b, path)
	b.Cleanup(func() {
		if err := record.Stop(); err != nil {
			b.Error(err)
		}
	})
}

func BenchmarkHookRecord(b *testing.B)         { benchHookRecord(b, false) }
func BenchmarkHookRecordNullSink(b *testing.B) { benchHookRecord(b, true) }

func benchHookRecord(b *testing.B, null bool) {
	benchStart(b, null)
	var x int
	p := unsafe.Pointer(&x)
	b.ReportAllocs()
	for b.Loop() {
		Use(1, p)
	}
}

func BenchmarkHookRecordParallel(b *testing.B)         { benchHookRecordParallel(b, false) }
func BenchmarkHookRecordParallelNullSink(b *testing.B) { benchHookRecordParallel(b, true) }

func benchHookRecordParallel(b *testing.B, null bool) {
	benchStart(b, null)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var x int
		p := unsafe.Pointer(&x)
		for pb.Next() {
			Use(1, p)
		}
	})
}
