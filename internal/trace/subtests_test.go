package trace

import (
	"path/filepath"
	"reflect"
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
	// Convert drops the marks too.
	writeRaw(t, raw, bt)
	if n, err := Convert(raw, out, testMeta); err != nil || n != int64(bt.Len()-4) {
		t.Errorf("Convert: %d events, %v; want %d", n, err, bt.Len()-4)
	}
}
