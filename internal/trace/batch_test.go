package trace

import (
	"reflect"
	"strings"
	"testing"

	"github.com/memorder/wafl/abi"
)

func TestBatch(t *testing.T) {
	var b Batch
	e := abi.RawEvent{Time: 3, G: 4, Obj: 5, Clock: 6, Site: 7, Op: abi.OpDispose}
	b.AppendRaw(e)
	b.Append(1, 2, 3, 4, 5, uint8(abi.OpUse))
	if b.Len() != 2 || b.Row(0) != e || b.Check() != nil {
		t.Fatalf("batch %+v", b)
	}
	var c Batch
	c.CopyFrom(&b)
	if c.Row(1) != b.Row(1) {
		t.Fatal("CopyFrom")
	}
	b.Op = b.Op[:1]
	if b.Check() == nil || b.Len() != 1 {
		t.Fatal("ragged batch not reported")
	}
	b.Reset()
	if b.Len() != 0 {
		t.Fatal("Reset")
	}
}

// TestColumnsMatchBatch keeps the column table in step with Batch and the
// raw record: one Batch field per column, in order, of the column's width
// and signedness, and a field of abi.RawEvent of the same name and type
// for each (Row and AppendRaw convert between them).
func TestColumnsMatchBatch(t *testing.T) {
	rt := reflect.TypeOf(abi.RawEvent{})
	bt := reflect.TypeOf(Batch{})
	if bt.NumField() != len(Columns) {
		t.Fatalf("Batch has %d fields, Columns %d", bt.NumField(), len(Columns))
	}
	for i, c := range Columns {
		f := bt.Field(i)
		e := f.Type.Elem()
		signed := e.Kind() >= reflect.Int && e.Kind() <= reflect.Int64
		if !strings.EqualFold(f.Name, c.Name) || int(e.Size()) != c.Width || signed != c.Signed {
			t.Errorf("column %d is %+v, Batch field %s []%s", i, c, f.Name, e)
		}
		if r, ok := rt.FieldByName(f.Name); !ok || r.Type.Size() != e.Size() || r.Type.Kind() != e.Kind() {
			t.Errorf("Batch field %s []%s has no abi.RawEvent field of its type", f.Name, e)
		}
	}
}
