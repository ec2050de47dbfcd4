package abi

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

func TestSpecsIndexedByOp(t *testing.T) {
	seen := map[string]bool{}
	for i, s := range Specs {
		if s.Op != Op(i) {
			t.Errorf("Specs[%d].Op = %d", i, s.Op)
		}
		if s.Name == "" || seen[s.Name] {
			t.Errorf("Specs[%d].Name = %q: empty or repeated", i, s.Name)
		}
		seen[s.Name] = true
		if Op(i).String() != s.Name {
			t.Errorf("Op(%d).String() = %q, want %q", i, Op(i).String(), s.Name)
		}
	}
	if Op(NumOps).Valid() || OpNone.Valid() || !OpFork.Valid() {
		t.Error("Valid disagrees with the table")
	}
	for _, o := range []Op{OpInit, OpUse, OpDispose} {
		if !o.Access() {
			t.Errorf("%v is an access", o)
		}
	}
	if OpFork.Access() {
		t.Error("fork is not an access")
	}
}

func TestBatch(t *testing.T) {
	var b Batch
	e := RawEvent{Time: 3, G: 4, Obj: 5, Clock: 6, Site: 7, Op: OpDispose}
	b.AppendRaw(e)
	b.Append(1, 2, 3, 4, 5, uint8(OpUse))
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

// TestColumnsMatchBatch keeps the column table in step with Batch: one
// field per column, in order, of the column's width and signedness.
func TestColumnsMatchBatch(t *testing.T) {
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
	}
}

// TestLeaf keeps abi a leaf: the standard library only.
func TestLeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/memorder/wafl/abi" {
			t.Errorf("abi imports %s; it must use only the standard library", p)
		}
	}
}
