package lcc

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// stackGoid parses the goroutine id from runtime.Stack, the slow but
// authoritative way.
func stackGoid(t testing.TB) uint64 {
	var buf [64]byte
	s := buf[:runtime.Stack(buf[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	if i := bytes.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		t.Errorf("cannot parse goroutine id from runtime.Stack output %q: %v", buf[:], err)
	}
	return id
}

func TestGoidMatchesStack(t *testing.T) {
	const n = 2000
	ids := make([]uint64, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.Gosched()
			got, want := Goid(), stackGoid(t)
			ids[i] = got
			if got != want {
				mu.Lock()
				bad = append(bad, strconv.FormatUint(got, 10)+"!="+strconv.FormatUint(want, 10))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("goid.Get disagrees with runtime.Stack on %s (%d goroutines): %v", runtime.Version(), len(bad), bad[:min(len(bad), 10)])
	}
	seen := make(map[uint64]bool, n)
	for _, id := range ids {
		if id == 0 || seen[id] {
			t.Fatalf("goroutine id %d is zero or not unique", id)
		}
		seen[id] = true
	}
	if Goid() != stackGoid(t) {
		t.Fatalf("goid of the test goroutine disagrees with runtime.Stack")
	}
}

// TestGoidFastPath checks that goid.Get is the g-struct read, not the
// runtime.Stack fallback, by comparing the two relative to each other (the
// fast path is a load, about 1 ns; runtime.Stack about 1 µs). A 20x margin
// and a retry budget keep it robust on a loaded machine and under -race.
func TestGoidFastPath(t *testing.T) {
	perOp := func(n int, f func()) time.Duration {
		start := time.Now()
		for range n {
			f()
		}
		return time.Since(start) / time.Duration(n)
	}
	var sink uint64
	var fast, slow time.Duration
	for range 5 {
		fast = perOp(200_000, func() { sink += Goid() })
		slow = perOp(2_000, func() { sink += stackGoid(t) })
		if fast*20 < slow {
			return
		}
	}
	t.Fatalf("goid lookup takes %v/op, runtime.Stack %v/op: goid.Get is not on its fast path for %s/%s",
		fast, slow, runtime.GOOS, runtime.GOARCH)
}

func TestForkAdoptCurrent(t *testing.T) {
	Enable()
	defer Disable()
	done := make(chan struct{})
	go func() {
		defer close(done)
		g, c := Current()
		if c != 1 {
			t.Errorf("fresh goroutine has clock %d, want 1", c)
		}
		t1 := Fork()
		if t1.Parent != g || t1.Clock != 1 {
			t.Errorf("first Fork = %+v, want {%d 1}", t1, g)
		}
		if _, c := Current(); c != 2 {
			t.Errorf("clock after one fork = %d, want 2", c)
		}
		t2 := Fork()
		if t2.Clock != 2 {
			t.Errorf("second Fork clock = %d, want 2", t2.Clock)
		}
		ch := make(chan Edge)
		go func() {
			e, ok := Adopt(t2)
			if !ok {
				t.Error("Adopt of a non-empty token returned ok=false")
			}
			if _, c := Current(); c != 1 {
				t.Errorf("child clock = %d, want 1", c)
			}
			ch <- e
		}()
		e := <-ch
		if e.Parent != g || e.Clock != 2 || e.Child == g || e.Child == 0 {
			t.Errorf("edge = %+v, want parent %d clock 2 and another child", e, g)
		}
	}()
	<-done
	if _, ok := Adopt(Token{}); ok {
		t.Error("Adopt of the zero token returned ok=true")
	}
	Disable()
	if tok := Fork(); tok != (Token{}) {
		t.Errorf("Fork with tracking off = %+v, want zero token", tok)
	}
}

var overflowRuns uint64

func TestOverflowGoroutineIDs(t *testing.T) {
	// Ids beyond the directory use the locked map; exercise it directly.
	overflowRuns++ // a fresh id per run (-count)
	g := uint64(dirSize)<<chunkBits + overflowRuns
	if c := clockOf(g); c != 1 {
		t.Fatalf("clock of unseen overflow id = %d, want 1", c)
	}
	if c := advance(g); c != 1 {
		t.Fatalf("advance returned %d, want 1", c)
	}
	if c := clockOf(g); c != 2 {
		t.Fatalf("clock after advance = %d, want 2", c)
	}
}

func TestHotPathNoAllocs(t *testing.T) {
	Enable()
	defer Disable()
	Fork() // allocate this goroutine's chunk
	if n := testing.AllocsPerRun(1000, func() {
		tok := Fork()
		Adopt(tok)
		Current()
	}); n != 0 {
		t.Fatalf("Fork/Adopt/Current allocate %v times per run, want 0", n)
	}
}

func BenchmarkGoid(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Goid()
	}
}

func BenchmarkCurrent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Current()
	}
}

func BenchmarkForkOff(b *testing.B) {
	Disable()
	b.ReportAllocs()
	for b.Loop() {
		Adopt(Fork())
	}
}

func BenchmarkForkOn(b *testing.B) {
	Enable()
	defer Disable()
	b.ReportAllocs()
	for b.Loop() {
		Adopt(Fork())
	}
}
