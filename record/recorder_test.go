package record

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/lcc"
)

func readSpill(t *testing.T, path string) []abi.RawEvent {
	t.Helper()
	evs, err := trace.ReadRawFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// countSpill counts the events in the complete batches of a spill file
// that may be being written; -1 if it cannot be read.
func countSpill(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	r, err := trace.NewRawReader(f, path)
	if err != nil {
		return -1
	}
	n := 0
	for r.Next() {
		n += r.Len()
	}
	if err := r.Err(); err != nil && !errors.Is(err, trace.ErrTruncated) {
		return -1
	}
	return n
}

func startTemp(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.raw")
	if err := Start(path); err != nil {
		t.Fatal(err)
	}
	lcc.Enable()
	t.Cleanup(func() {
		Stop()
		lcc.Disable()
	})
	return path
}

// TestRecordStress records from many goroutines at once and checks that
// every event arrives exactly once, in program order per goroutine, with
// the right fork rows.
func TestRecordStress(t *testing.T) {
	goroutines, perG := 8, 150_000 // 1.2M events
	if testing.Short() {
		perG = 20_000
	}
	stress(t, goroutines, perG)
}

// TestRecordBackpressure runs the stress test with producers made to wait
// for the writer after every filled buffer.
func TestRecordBackpressure(t *testing.T) {
	defer func(old int32) { maxPending = old }(maxPending)
	maxPending = 0
	stress(t, 8, 20_000)
}

func stress(t *testing.T, goroutines, perG int) {
	path := startTemp(t)
	parent := lcc.Goid()
	objs := make([][]byte, goroutines)
	gids := make([]uint64, goroutines)
	tokens := make([]lcc.Token, goroutines)
	var wg sync.WaitGroup
	for i := range goroutines {
		objs[i] = make([]byte, perG)
		tok := lcc.Fork()
		tokens[i] = tok
		wg.Add(1)
		go func() {
			if e, ok := lcc.Adopt(tok); ok {
				AddFork(e)
			}
			defer wg.Done()
			gids[i] = lcc.Goid()
			o := objs[i]
			for j := range perG {
				Add(uint32(i+1), unsafe.Pointer(&o[j]), []abi.Op{abi.OpInit, abi.OpUse, abi.OpDispose}[j%3])
				if j%4096 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	if err := Stop(); err != nil {
		t.Fatal(err)
	}
	if err := Stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	Add(1, unsafe.Pointer(&objs[0][0]), abi.OpUse) // after Stop: dropped, no panic

	evs := readSpill(t, path)
	if want := goroutines*perG + goroutines; len(evs) != want {
		t.Fatalf("read %d events, want %d (%d per goroutine + %d forks)", len(evs), want, perG, goroutines)
	}
	byG := map[uint64]int{}
	for i, g := range gids {
		byG[g] = i
	}
	next := make([]int, goroutines)
	var forks int
	forked := make([]bool, goroutines)
	var lastTime = make([]int64, goroutines)
	for _, e := range evs {
		if e.Op == abi.OpFork {
			i, ok := byG[e.Obj]
			if !ok || e.G != parent || e.Clock != tokens[i].Clock || e.Site != 0 || forked[i] {
				t.Fatalf("bad or repeated fork row %+v (parent %d, tokens %+v)", e, parent, tokens)
			}
			forked[i] = true
			forks++
			continue
		}
		i, ok := byG[e.G]
		if !ok {
			t.Fatalf("event of unknown goroutine: %+v", e)
		}
		if !forked[i] {
			t.Fatalf("goroutine %d: event before its fork row", i)
		}
		j := next[i]
		if want := uint64(uintptr(unsafe.Pointer(&objs[i][0]))) + uint64(j); e.Obj != want {
			t.Fatalf("goroutine %d: event %d has obj offset %d: lost, duplicated or reordered", i, j, int64(e.Obj-want)+int64(j))
		}
		wantOp := []abi.Op{abi.OpInit, abi.OpUse, abi.OpDispose}[j%3]
		if e.Op != wantOp || e.Site != uint32(i+1) || e.Clock != 1 {
			t.Fatalf("goroutine %d event %d = %+v, want op %v site %d clock 1", i, j, e, wantOp, i+1)
		}
		if e.Time < lastTime[i] {
			t.Fatalf("goroutine %d: time went backwards at event %d", i, j)
		}
		lastTime[i] = e.Time
		next[i]++
	}
	if forks != goroutines {
		t.Fatalf("%d fork rows, want %d", forks, goroutines)
	}
	if w, d := stats(); w != int64(len(evs)) || d != 0 {
		t.Fatalf("stats = %d written, %d dropped; want %d, 0", w, d, len(evs))
	}
}

var heapSink *int

// TestPeriodicFlush checks that events reach the file while the recording
// is still running (a crash loses only the last moments).
func TestPeriodicFlush(t *testing.T) {
	path := startTemp(t)
	// On the heap: the hooks do not make a slot escape, and a stack slot's
	// address changes when the stack grows.
	x := new(int)
	heapSink = x
	Add(7, unsafe.Pointer(x), abi.OpUse)
	for attempt := 0; ; attempt++ {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() >= abi.RawHeaderSize+abi.RawFrameSize+abi.RawRecordSize {
			break
		}
		if attempt > 2000 { // 20 s, against a 25 ms flush interval
			t.Fatalf("spill file still %d bytes long", fi.Size())
		}
		sleepMS(10)
	}
	evs := readSpill(t, path)
	if len(evs) != 1 || evs[0].Site != 7 || evs[0].Obj != uint64(uintptr(unsafe.Pointer(x))) {
		t.Fatalf("events %+v", evs)
	}
}

func TestStopConcurrent(t *testing.T) {
	path := startTemp(t)
	var x int
	for range 5000 {
		Add(1, unsafe.Pointer(&x), abi.OpUse)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Stop(); err != nil {
				t.Error(err)
			}
			// Every caller returns only after the data is on disk.
			fi, err := os.Stat(path)
			if err != nil {
				t.Error(err)
			} else if min := int64(abi.RawHeaderSize + 5000*abi.RawRecordSize); fi.Size() < min {
				t.Errorf("after Finish returned the spill file has %d bytes, want at least %d", fi.Size(), min)
			}
		}()
	}
	wg.Wait()
	if n := len(readSpill(t, path)); n != 5000 {
		t.Fatalf("%d events, want 5000", n)
	}
}

func TestStartErrors(t *testing.T) {
	startTemp(t)
	if err := Start(filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "already in progress") {
		t.Fatalf("second Start: %v", err)
	}
	Stop()
	if err := Start(filepath.Join(t.TempDir(), "no", "such", "dir", "x")); err == nil || !strings.Contains(err.Error(), "spill file") {
		t.Fatalf("Start in a missing directory: %v", err)
	}
}

func TestAddNoAllocs(t *testing.T) {
	startTemp(t)
	var x int
	p := unsafe.Pointer(&x)
	for range 3 * bufEvents { // warm up: buffers allocated and recycled
		Add(1, p, abi.OpUse)
	}
	edge := lcc.Edge{Parent: 1, Clock: 1, Child: lcc.Goid()}
	if n := testing.AllocsPerRun(10*bufEvents, func() {
		Add(1, p, abi.OpInit)
		Add(2, p, abi.OpUse)
		AddFork(edge)
	}); n != 0 {
		t.Fatalf("recording allocates %v times per run, want 0", n)
	}
	Stop()
	if n := testing.AllocsPerRun(1000, func() { Add(1, p, abi.OpUse); AddFork(edge) }); n != 0 {
		t.Fatalf("a stopped recorder allocates %v times per run, want 0", n)
	}
}

func BenchmarkAddNullSink(b *testing.B) {
	if _, err := os.Stat(os.DevNull); err != nil {
		b.Skip("no", os.DevNull)
	}
	if err := Start(os.DevNull); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := Stop(); err != nil {
			b.Error(err)
		}
	})
	var x int
	p := unsafe.Pointer(&x)
	b.ReportAllocs()
	for b.Loop() {
		Add(1, p, abi.OpUse)
	}
}

// BenchmarkAddThinned: thinning on, every use of the same (goroutine,
// site, slot): all but one a millisecond are counted, not written.
func BenchmarkAddThinned(b *testing.B) { benchAddThin(b, 1) }

// BenchmarkAddThinKept: thinning on, each use of another slot (a cycle of
// 1<<14, more than the thinning table holds): every use is written, after
// the thinning check.
func BenchmarkAddThinKept(b *testing.B) { benchAddThin(b, 1<<14) }

func benchAddThin(b *testing.B, slots int) {
	if _, err := os.Stat(os.DevNull); err != nil {
		b.Skip("no", os.DevNull)
	}
	thinning = true
	defer func() { thinning = false }()
	if err := Start(os.DevNull); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := Stop(); err != nil {
			b.Error(err)
		}
	})
	xs := make([]int, slots)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		Add(1, unsafe.Pointer(&xs[i&(slots-1)]), abi.OpUse)
		i++
	}
}

// BenchmarkNow measures the clock every event is stamped with (nanotime).
func BenchmarkNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		nanotime()
	}
}

// TestNoResidentGoroutine checks that an idle recorder leaves no goroutine
// behind, so goroutine-leak checks (goleak) in recorded tests pass, and
// that the events were flushed by then.
func TestNoResidentGoroutine(t *testing.T) {
	path := startTemp(t)
	x := new(int)
	heapSink = x
	done := make(chan struct{})
	go func() {
		for range 3*bufEvents + 5 {
			Add(3, unsafe.Pointer(x), abi.OpUse)
		}
		close(done)
	}()
	<-done
	// Within a few flush intervals the events are in the file and no
	// recorder goroutine is left, while the recording is still on.
	want := 3*bufEvents + 5
	buf := make([]byte, 1<<20)
	for attempt := 0; ; attempt++ {
		stacks := string(buf[:runtime.Stack(buf, true)])
		n := countSpill(path) // the file may end inside a batch being written
		if n == want && !strings.Contains(stacks, "record.(*recorder)") {
			break
		}
		if attempt > 500 { // 5 s against a 25 ms flush interval
			t.Fatalf("after %d attempts: %d of %d events written; goroutines:\n%s", attempt, n, want, stacks)
		}
		sleepMS(10)
	}
	if r := active.Load(); r == nil || r.isClosed() {
		t.Fatal("recording stopped")
	}
}

// TestThinning: repeated uses of one slot at one site by one goroutine
// within an interval of 1<<abi.ThinShift ns are left out and counted in a
// thinned row (written at the next mark, or at Stop); another goroutine's,
// another site's and another slot's uses, and inits and disposes, are
// kept; every use is either written or counted.
func TestThinning(t *testing.T) {
	thinning = true
	defer func() { thinning = false }()
	path := startTemp(t)
	var x, y int
	const n = 1000
	for range n {
		Add(1, unsafe.Pointer(&x), abi.OpUse)
		Add(2, unsafe.Pointer(&x), abi.OpUse)
		Add(1, unsafe.Pointer(&y), abi.OpUse)
		Add(3, unsafe.Pointer(&x), abi.OpInit)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		lcc.Adopt(lcc.Fork())
		for range n {
			Add(1, unsafe.Pointer(&x), abi.OpUse)
		}
	}()
	wg.Wait()
	Mark(abi.OpTestEnd, abi.TestID("TestThinning"), 0)
	if err := Stop(); err != nil {
		t.Fatal(err)
	}
	kept := map[[2]uint64]int{} // (site, goroutine) → use rows
	gs := map[uint64]bool{}
	var uses, thinned, inits, thinRows int
	for _, e := range readSpill(t, path) {
		switch e.Op {
		case abi.OpUse:
			uses++
			kept[[2]uint64{uint64(e.Site), e.Obj}]++
			gs[e.G] = true
		case abi.OpThinned:
			thinned += int(e.Obj)
			thinRows++
		case abi.OpInit:
			inits++
		}
	}
	if uses+thinned != 4*n {
		t.Fatalf("%d uses written and %d thinned, want %d in all", uses, thinned, 4*n)
	}
	if inits != n {
		t.Fatalf("%d inits written, want all %d", inits, n)
	}
	if thinned == 0 || thinRows != 1 {
		t.Fatalf("%d uses thinned in %d thinned rows; want some, in the row before the mark", thinned, thinRows)
	}
	if len(kept) != 3 || len(gs) != 2 {
		t.Fatalf("uses kept for (site, slot) %v and goroutines %v: want each of the 3 pairs and both goroutines", kept, gs)
	}
}
