package split

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

const ms = int64(time.Millisecond)

func writeRaw(t testing.TB, evs []abi.RawEvent) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pkg.raw")
	b := abi.AppendRawHeader(nil)
	// Two batches, so that the reader's batching is exercised.
	half := len(evs) / 2
	for _, part := range [][]abi.RawEvent{evs[:half], evs[half:]} {
		if len(part) > 0 {
			b = appendRawBatch(b, abi.AppendRawEvents(nil, part))
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mark(op abi.Op, tm int64, g uint64, test string, failed bool) abi.RawEvent {
	e := abi.RawEvent{Time: tm, G: g, Obj: abi.TestID(test), Clock: 1, Op: op}
	if failed {
		e.Site = 1
	}
	return e
}

func ev(tm int64, g uint64, site uint32) abi.RawEvent {
	return abi.RawEvent{Time: tm, G: g, Obj: 0x1000, Clock: 1, Site: site, Op: abi.OpUse}
}

func fork(tm int64, parent, child uint64) abi.RawEvent {
	return abi.RawEvent{Time: tm, G: parent, Obj: child, Clock: 2, Op: abi.OpFork}
}

func split(t *testing.T, evs []abi.RawEvent, tests ...string) (*Stats, map[string][]abi.RawEvent) {
	t.Helper()
	raw := writeRaw(t, evs)
	dir := t.TempDir()
	out := func(test string) string { return filepath.Join(dir, test+".raw") }
	st, err := Split(raw, tests, out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]abi.RawEvent{}
	for _, test := range tests {
		evs, err := trace.ReadRawFile(out(test))
		if err != nil {
			t.Fatal(err)
		}
		got[test] = evs
	}
	return st, got
}

func sites(evs []abi.RawEvent) []uint32 {
	var s []uint32
	for _, e := range evs {
		if e.Op.Mark() {
			s = append(s, 9999)
		}
		s = append(s, e.Site)
	}
	return s
}

func sameSites(t *testing.T, what string, got []abi.RawEvent, want ...uint32) {
	t.Helper()
	g := sites(got)
	if len(g) != len(want) {
		t.Errorf("%s: sites %v, want %v", what, g, want)
		return
	}
	for i := range g {
		if g[i] != want[i] {
			t.Errorf("%s: sites %v, want %v", what, g, want)
			return
		}
	}
}

// TestParallelTestsStayApart: two tests whose windows overlap (t.Parallel)
// get their own goroutines' events, subtest goroutines (fork rows from the
// test goroutine, grandchildren too) included; the unowned main goroutine's
// events before the first test are copied to both.
func TestParallelTestsStayApart(t *testing.T) {
	const main, a, b, a1, a2, b1 = 1, 10, 20, 11, 12, 21
	evs := []abi.RawEvent{
		ev(1*ms, main, 1), // prologue (package init)
		mark(abi.OpTestBegin, 10*ms, a, "TestA", false),
		mark(abi.OpTestBegin, 11*ms, b, "TestB", false),
		ev(12*ms, a, 100),
		ev(12*ms, b, 200),
		fork(13*ms, a, a1), // a subtest
		ev(14*ms, a1, 101),
		fork(14*ms, a1, a2), // the subtest's goroutine
		ev(15*ms, a2, 102),
		fork(15*ms, b, b1),
		ev(16*ms, b1, 201),
		ev(17*ms, a2, 103),
		mark(abi.OpTestEnd, 20*ms, a, "TestA", false),
		mark(abi.OpTestEnd, 30*ms, b, "TestB", false),
		ev(40*ms, main, 2), // epilogue (TestMain after m.Run)
	}
	st, got := split(t, evs, "TestA", "TestB")
	sameSites(t, "TestA", got["TestA"], 1, 100, 0, 101, 0, 102, 103, 2)
	sameSites(t, "TestB", got["TestB"], 1, 200, 0, 201, 2)
	if st.Prologue != 1 || st.Epilogue != 1 || st.Shared != 0 || st.Unattributed != 0 || st.Marks != 4 {
		t.Errorf("stats %+v", st)
	}
	for _, n := range []string{"TestA", "TestB"} {
		if ts := st.Tests[n]; !ts.Ended || ts.Failed || ts.Runs != 1 || ts.Late != 0 {
			t.Errorf("%s: %+v", n, ts)
		}
	}
	if o := st.Owner(a2); o != "TestA" {
		t.Errorf("owner of a2 = %q", o)
	}
	if o := st.Owner(main); o != "" {
		t.Errorf("owner of main = %q", o)
	}
	// The prologue stands right before each test's begin, the epilogue
	// right after its end, as in a run of the test alone.
	if tb := got["TestB"]; tb[0].Time != 2*ms || tb[len(tb)-1].Time != 40*ms {
		t.Errorf("TestB prologue at %d, epilogue at %d", tb[0].Time, tb[len(tb)-1].Time)
	}
	if ta := got["TestA"]; ta[0].Time != 1*ms || ta[len(ta)-1].Time != 30*ms {
		t.Errorf("TestA prologue at %d, epilogue at %d", ta[0].Time, ta[len(ta)-1].Time)
	}
}

// TestGoroutineOutlivesItsTest: a goroutine of TestA that runs on after
// TestA ended keeps counting as TestA's for Grace, then its events are
// dropped and counted; TestB, running meanwhile, gets none of them.
func TestGoroutineOutlivesItsTest(t *testing.T) {
	const a, b, leak = 10, 20, 11
	g := Grace.Nanoseconds()
	evs := []abi.RawEvent{
		mark(abi.OpTestBegin, 10*ms, a, "TestA", false),
		fork(11*ms, a, leak),
		ev(12*ms, leak, 100),
		mark(abi.OpTestEnd, 20*ms, a, "TestA", false),
		mark(abi.OpTestBegin, 21*ms, b, "TestB", false),
		ev(22*ms, leak, 101),     // within the grace: TestA's
		ev(20*ms+g+1, leak, 102), // after it: dropped
		ev(20*ms+g+2, b, 200),    // TestB's own
		ev(20*ms+g+3, leak, 103), // dropped
		mark(abi.OpTestEnd, 20*ms+g+10, b, "TestB", false),
	}
	st, got := split(t, evs, "TestA", "TestB")
	sameSites(t, "TestA", got["TestA"], 0, 100, 101)
	sameSites(t, "TestB", got["TestB"], 200)
	if n := st.Tests["TestA"].Late; n != 2 {
		t.Errorf("TestA late = %d, want 2", n)
	}
}

// TestUnownedDuringTests: an event of a goroutine no test owns goes to
// every test running at its time (counted as shared when more than one),
// or just after a window to the test that ended, else it is dropped.
func TestUnownedDuringTests(t *testing.T) {
	const a, b, bg = 10, 20, 5
	evs := []abi.RawEvent{
		mark(abi.OpTestBegin, 10*ms, a, "TestA", false),
		mark(abi.OpTestBegin, 11*ms, b, "TestB", false),
		ev(12*ms, bg, 7), // both running: shared
		mark(abi.OpTestEnd, 20*ms, a, "TestA", false),
		ev(21*ms, bg, 8), // only TestB running
		mark(abi.OpTestEnd, 30*ms, b, "TestB", false),
		mark(abi.OpTestBegin, 1000*ms, a+1, "TestC", false),
		ev(31*ms, bg, 9),   // after TestB ended, within grace
		ev(500*ms, bg, 10), // between tests, far from any: dropped
		mark(abi.OpTestEnd, 1010*ms, a+1, "TestC", false),
	}
	st, got := split(t, evs, "TestA", "TestB", "TestC")
	sameSites(t, "TestA", got["TestA"], 7)
	sameSites(t, "TestB", got["TestB"], 7, 8, 9)
	sameSites(t, "TestC", got["TestC"])
	if st.Shared != 1 || st.Unattributed != 1 {
		t.Errorf("shared %d, unattributed %d", st.Shared, st.Unattributed)
	}
}

// TestCrashedRun: a run cut inside a batch (a crash) splits up to the cut;
// the test that was running has no end mark, the failed one says so.
func TestCrashedRun(t *testing.T) {
	const a, b, c = 10, 20, 30
	evs := []abi.RawEvent{
		mark(abi.OpTestBegin, 10*ms, a, "TestA", false),
		ev(11*ms, a, 100),
		mark(abi.OpTestEnd, 12*ms, a, "TestA", false),
		mark(abi.OpTestBegin, 13*ms, b, "TestB", false),
		mark(abi.OpTestEnd, 14*ms, b, "TestB", true),
		mark(abi.OpTestBegin, 15*ms, c, "TestC", false),
		ev(16*ms, c, 300),
	}
	raw := writeRaw(t, evs)
	data, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	// Append half of a batch: the crash came while it was written.
	cut := appendRawBatch(nil, abi.AppendRawEvents(nil, []abi.RawEvent{ev(17*ms, c, 301)}))
	if err := os.WriteFile(raw, append(data, cut[:20]...), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, err := Split(raw, []string{"TestA", "TestB", "TestC", "TestD"}, func(test string) string { return filepath.Join(dir, test) })
	if err != nil {
		t.Fatal(err)
	}
	if !st.Truncated {
		t.Error("not truncated")
	}
	want := map[string][2]bool{"TestA": {true, false}, "TestB": {true, true}, "TestC": {false, false}, "TestD": {false, false}}
	for n, w := range want {
		if ts := st.Tests[n]; ts.Ended != w[0] || ts.Failed != w[1] {
			t.Errorf("%s: ended %v failed %v, want %v", n, ts.Ended, ts.Failed, w)
		}
	}
	if o := st.Owner(c); o != "TestC" {
		t.Errorf("owner of the crashed goroutine: %q", o)
	}
}

// appendRawBatch appends a spill-file batch frame around payload, as the
// recorder writes it (abi.PutRawFrameHeader).
func appendRawBatch(b, payload []byte) []byte {
	frame := make([]byte, abi.RawFrameSize+len(payload))
	copy(frame[abi.RawFrameSize:], payload)
	abi.PutRawFrameHeader(frame)
	return append(b, frame...)
}

// BenchmarkSplit splits a package run of 8 tests one after another, each
// starting 2000 goroutines that make 100 accesses at 20 sites, written in
// runs of 10 events of one goroutine, as per-thread buffers interleave
// them: 1.6M events.
func BenchmarkSplit(b *testing.B) {
	var tests []string
	var evs []abi.RawEvent
	tm := int64(0)
	g := uint64(100)
	for i := range 8 {
		test := "Test" + string(rune('A'+i))
		tests = append(tests, test)
		root := g
		g++
		evs = append(evs, mark(abi.OpTestBegin, tm, root, test, false))
		var kids []uint64
		for range 2000 {
			tm++
			evs = append(evs, fork(tm, root, g))
			kids = append(kids, g)
			g++
		}
		for run := range 10 {
			for _, k := range kids {
				for e := range 10 {
					tm++
					evs = append(evs, ev(tm, k, uint32(1+(run*10+e)%20)))
				}
			}
		}
		tm++
		evs = append(evs, mark(abi.OpTestEnd, tm, root, test, false))
	}
	raw := writeRaw(b, evs)
	dir := b.TempDir()
	out := func(test string) string { return filepath.Join(dir, test+".raw") }
	b.SetBytes(int64(len(evs) * abi.RawRecordSize))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Split(raw, tests, out); err != nil {
			b.Fatal(err)
		}
	}
}
