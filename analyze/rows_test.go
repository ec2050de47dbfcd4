package analyze

import (
	"reflect"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

// TestRowSpillRoundTrip: every sited op, the largest site id and extreme
// values come back from the row spill as they went in.
func TestRowSpillRoundTrip(t *testing.T) {
	var in trace.Batch
	for op := abi.Op(0); op < abi.NumOps; op++ {
		if !op.Sited() {
			continue
		}
		in.Append(-5, 1<<63|uint64(op), 1<<31|uint32(op), abi.MaxSite, ^uint64(0)-uint64(op), uint8(op))
		in.Append(int64(op)<<40, uint64(op), 0, 1, 0, uint8(op))
	}
	s, err := newRowSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for i := range in.Len() {
		if err := s.add(&in, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	var out []abi.RawEvent
	if err := s.scan(func(c *trace.Batch) {
		for i := range c.Len() {
			out = append(out, c.Row(i))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(out) != in.Len() {
		t.Fatalf("%d rows back, %d in", len(out), in.Len())
	}
	for i, got := range out {
		if want := in.Row(i); got != want {
			t.Errorf("row %d: got %+v, want %+v", i, got, want)
		}
	}
}

// TestLifecycleSpillRoundTrip: lifecycle events come back from a spilled
// store as they went in.
func TestLifecycleSpillRoundTrip(t *testing.T) {
	s := newLifecycleStore(1, t.TempDir())
	defer s.close()
	var in []lcEvent
	for i := range 3000 {
		op := abi.OpInit
		if i%2 == 1 {
			op = abi.OpDispose
		}
		e := lcEvent{obj: uint64(i) * 0x9E3779B97F4A7C15, time: int64(i) - 7, g: 1<<63 | uint64(i), clock: uint32(i), site: abi.MaxSite - uint32(i), op: op}
		in = append(in, e)
		if err := s.add(e); err != nil {
			t.Fatal(err)
		}
	}
	groups, err := s.finish()
	if err != nil {
		t.Fatal(err)
	}
	if s.dir == "" {
		t.Fatal("the store did not spill")
	}
	seen := map[lcEvent]bool{}
	for _, g := range groups {
		evs, err := s.load(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			seen[e] = true
		}
	}
	for _, e := range in {
		if !seen[e] {
			t.Errorf("event %+v lost", e)
		}
	}
	if len(seen) != len(in) {
		t.Errorf("%d events back, %d in", len(seen), len(in))
	}
}

// TestRowSpillPlanWithChecks: the exact passes over the row spill give
// the in-memory plan for a trace with check rows.
func TestRowSpillPlanWithChecks(t *testing.T) {
	const ch = 0xC1
	rows := []row{
		checkAt(1*ms, 1, 1, 4, ch),
		disposeAt(1*ms+1000, 1, 1, 5, ch),
		checkAt(9*ms, 2, 1, 4, ch),
		useAt(9*ms+1000, 3, 1, 6, ch),
	}
	mem, _ := analyzeRows(t, rows, Options{})
	sp, _ := analyzeRows(t, rows, Options{RowSpill: true, TempDir: t.TempDir()})
	mem.Provenance.Created, sp.Provenance.Created = "", ""
	if !reflect.DeepEqual(mem, sp) {
		t.Fatalf("the row spill's plan differs:\n%+v\n%+v", mem.Locations, sp.Locations)
	}
}
