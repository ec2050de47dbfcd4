package trace_test

import (
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/lcc"
	"github.com/memorder/wafl/record"
)

// TestConvertRecording records with the real recorder and converts.
func TestConvertRecording(t *testing.T) {
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "rec.raw"), filepath.Join(dir, "rec.arrows")
	if err := record.Start(raw); err != nil {
		t.Fatal(err)
	}
	lcc.Enable()
	defer lcc.Disable()
	var x [1001]int // a slot per use: the recorder thins repeated uses of one
	tok := lcc.Fork()
	done := make(chan struct{})
	go func() {
		if e, ok := lcc.Adopt(tok); ok {
			record.AddFork(e)
		}
		for i := range 1000 {
			record.Add(2, unsafe.Pointer(&x[i+1]), abi.OpUse)
		}
		close(done)
	}()
	record.Add(1, unsafe.Pointer(&x[0]), abi.OpInit)
	<-done
	if err := record.Stop(); err != nil {
		t.Fatal(err)
	}
	n, err := trace.Convert(raw, out, trace.Meta{Package: "example.com/p", Test: "TestX"})
	if err != nil || n != 1002 {
		t.Fatalf("Convert = %d, %v; want 1002", n, err)
	}
	rd, err := trace.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	counts := map[abi.Op]int{}
	for rd.Next() {
		for _, op := range rd.Batch().Op {
			counts[abi.Op(op)]++
		}
	}
	if rd.Err() != nil || counts[abi.OpUse] != 1000 || counts[abi.OpInit] != 1 || counts[abi.OpFork] != 1 {
		t.Fatalf("counts %v, err %v", counts, rd.Err())
	}
}
