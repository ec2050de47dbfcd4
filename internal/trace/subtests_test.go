package trace

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/memorder/wafl/abi"
)

// TestConvertSubtests: the conversion attributes each site to the
// first-level subtests whose goroutines reached it (a nested subtest's and
// a subtest's goroutines count for the outermost), to outside for the
// test's own goroutine and goroutines of unknown parent, and drops the
// marks from the Arrow trace.
func TestConvertSubtests(t *testing.T) {
	a, inner, b := abi.TestID("TestX/a"), abi.TestID("TestX/a/inner"), abi.TestID("TestX/b")
	bt := &Batch{}
	add := func(g, obj uint64, site uint32, op abi.Op) { bt.Append(int64(bt.Len()+1), g, 1, site, obj, uint8(op)) }
	add(1, 0x100, 10, abi.OpInit) // the test's goroutine
	add(1, 2, 0, abi.OpFork)      // 1 starts 2, 2 starts 3 and 4, 1 starts 5
	add(2, 0, 0, abi.OpSubtest)
	add(2, 2, 0, abi.OpSubtest) // a second mark of a goroutine does not count
	bt.Op[bt.Len()-1], bt.Obj[bt.Len()-1] = uint8(abi.OpSubtest), b
	add(2, 3, 0, abi.OpFork)
	add(3, 0x108, 20, abi.OpUse)
	add(3, 0x108, 20, abi.OpUse)
	add(2, 4, 0, abi.OpFork)
	add(4, 0, 0, abi.OpSubtest)
	add(4, 0x110, 30, abi.OpDispose)
	add(5, 0, 0, abi.OpSubtest)
	add(1, 5, 0, abi.OpFork) // the fork row after the child's mark
	add(5, 0x108, 20, abi.OpUse)
	add(5, 0x118, 40, abi.OpCheck)
	add(9, 0x120, 50, abi.OpUse) // no fork row: outside
	bt.Obj[2], bt.Obj[8], bt.Obj[10] = a, inner, b
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "t.raw"), filepath.Join(dir, "t.arrows")
	writeRaw(t, raw, bt)
	n, subs, err := ConvertSubtests(raw, out, testMeta, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(bt.Len()-4) {
		t.Errorf("%d events written, want %d (the four marks dropped)", n, bt.Len()-4)
	}
	got, _ := readTraceFile(t, out)
	for i := range got.Len() {
		if abi.Op(got.Op[i]) == abi.OpSubtest {
			t.Fatalf("row %d of the Arrow trace is a subtest mark", i)
		}
	}
	want := &Subtests{
		IDs:     []uint64{a, b},
		Sites:   map[uint32][]int{20: {0, 1}, 30: {0}, 40: {1}},
		Outside: map[uint32]bool{10: true, 50: true},
	}
	if !reflect.DeepEqual(subs, want) {
		t.Errorf("subtests\n got %+v\nwant %+v", subs, want)
	}

	// Without marks: no Subtests, every row kept.
	plain := &Batch{}
	plain.Append(1, 1, 1, 10, 0x100, uint8(abi.OpInit))
	writeRaw(t, raw, plain)
	if n, subs, err := ConvertSubtests(raw, out, testMeta, nil); err != nil || n != 1 || subs != nil {
		t.Errorf("no marks: %d events, %+v, %v; want 1, nil, nil", n, subs, err)
	}
	// Convert drops the marks too, and the test boundary marks of a
	// run of one test.
	withTest := &Batch{}
	withTest.Append(0, 1, 1, 0, abi.TestID("TestX"), uint8(abi.OpTestBegin))
	withTest.Append(int64(bt.Len()+1), 1, 1, 0, abi.TestID("TestX"), uint8(abi.OpTestEnd))
	writeRaw(t, raw, withTest, bt)
	if n, err := Convert(raw, out, testMeta); err != nil || n != int64(bt.Len()-4) {
		t.Errorf("Convert: %d events, %v; want %d", n, err, bt.Len()-4)
	}
	got, _ = readTraceFile(t, out)
	for i := range got.Len() {
		if op := abi.Op(got.Op[i]); op.Mark() || op == abi.OpSubtest {
			t.Fatalf("row %d of the Arrow trace is a mark (op %d)", i, op)
		}
	}
}

// TestConvertSubtestsMany checks the collector against a direct
// computation on a trace of many goroutines in four subtests (one nested)
// and outside them, whose events come in runs of one goroutine, sites in
// orders that repeat and differ, as a spill file's per-thread buffers
// interleave them.
func TestConvertSubtestsMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bt := &Batch{}
	add := func(g, obj uint64, site uint32, op abi.Op) { bt.Append(int64(bt.Len()+1), g, 1, site, obj, uint8(op)) }
	parent := map[uint64]uint64{}
	marks := map[uint64]uint64{}
	// Goroutine 1 is the test's; 2..5 are subtests, 6 a subtest inside 3.
	for g := uint64(2); g <= 6; g++ {
		p := uint64(1)
		if g == 6 {
			p = 3
		}
		add(p, g, 0, abi.OpFork)
		parent[g] = p
		id := abi.TestID(fmt.Sprintf("TestX/s%d", g))
		add(g, id, 0, abi.OpSubtest)
		marks[g] = id
	}
	type gsite struct {
		g    uint64
		site uint32
	}
	var rows []gsite
	live := []uint64{1, 2, 3, 4, 5, 6}
	for g := uint64(7); g < 3000; g++ {
		p := live[rng.IntN(len(live))]
		add(p, g, 0, abi.OpFork)
		parent[g] = p
		live = append(live, g)
	}
	for range 4000 {
		g := live[rng.IntN(len(live))]
		base := uint32(10 * rng.IntN(3))
		for k := range 1 + rng.IntN(12) {
			site := base + uint32(k%7) + 1
			if rng.IntN(5) == 0 {
				site = uint32(100 + rng.IntN(40))
			}
			add(g, 0x100, site, abi.OpUse)
			rows = append(rows, gsite{g, site})
		}
	}
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "t.raw"), filepath.Join(dir, "t.arrows")
	writeRaw(t, raw, bt)
	_, subs, err := ConvertSubtests(raw, out, testMeta, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The direct computation: each row's goroutine, up its fork
	// ancestry to the outermost marked goroutine.
	first := []uint64{2, 3, 4, 5} // 6 is inside 3
	want := &Subtests{Sites: map[uint32][]int{}, Outside: map[uint32]bool{}}
	for _, g := range first {
		want.IDs = append(want.IDs, marks[g])
	}
	for _, r := range rows {
		top := uint64(0)
		for x := r.g; x != 0; x = parent[x] {
			if _, ok := marks[x]; ok {
				top = x
			}
		}
		i := slices.Index(first, top)
		if i < 0 {
			want.Outside[r.site] = true
		} else if !slices.Contains(want.Sites[r.site], i) {
			want.Sites[r.site] = append(want.Sites[r.site], i)
		}
	}
	for site := range want.Sites {
		slices.Sort(want.Sites[site])
	}
	if !reflect.DeepEqual(subs, want) {
		t.Errorf("subtests\n got %+v\nwant %+v", subs, want)
	}
}

// BenchmarkConvertSubtests converts the trace of a test whose 15
// subtests start 20 000 goroutines each that run the same code (8 sites),
// the shape of a stress test: 5.1M rows.
func BenchmarkConvertSubtests(b *testing.B) {
	bt := &Batch{}
	add := func(g, obj uint64, site uint32, op abi.Op) { bt.Append(int64(bt.Len()+1), g, 1, site, obj, uint8(op)) }
	g := uint64(2)
	for s := range 15 {
		sub := g
		g++
		add(1, sub, 0, abi.OpFork)
		add(sub, abi.TestID(fmt.Sprintf("TestX/%d", s)), 0, abi.OpSubtest)
		for range 20000 {
			add(sub, g, 0, abi.OpFork)
			for k := range 8 {
				add(g, g<<4, uint32(k+1), abi.OpUse)
				add(g, g<<4, uint32(k+1), abi.OpUse)
			}
			g++
		}
	}
	var parts []*Batch // a spill file's batches hold at most 1M rows
	for lo := 0; lo < bt.Len(); lo += 1 << 16 {
		hi := min(lo+1<<16, bt.Len())
		parts = append(parts, &Batch{bt.Time[lo:hi], bt.G[lo:hi], bt.Clock[lo:hi], bt.Site[lo:hi], bt.Obj[lo:hi], bt.Op[lo:hi]})
	}
	dir := b.TempDir()
	raw, out := filepath.Join(dir, "t.raw"), filepath.Join(dir, "t.arrows")
	writeRaw(b, raw, parts...)
	b.SetBytes(int64(bt.Len() * abi.RawRecordSize))
	b.ResetTimer()
	for b.Loop() {
		if _, subs, err := ConvertSubtests(raw, out, testMeta, nil); err != nil || subs == nil || len(subs.IDs) != 15 {
			b.Fatalf("%v, %+v", err, subs)
		}
	}
}
