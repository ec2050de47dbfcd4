package trace

import (
	"bytes"
	"testing"

	"github.com/memorder/wafl/abi"
)

func TestDump(t *testing.T) {
	b := &Batch{}
	b.Append(100, 1, 1, 0, 7, uint8(abi.OpFork))
	b.Append(150, 7, 1, 3, 0xc000010, uint8(abi.OpUse))
	b.Append(160, 1, 2, 2, 0xc000010, uint8(abi.OpDispose))
	r, err := NewReader(bytes.NewReader(encode(t, b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Dump(&out, r, 0); err != nil {
		t.Fatal(err)
	}
	want := "# wafl trace v1 package=example.com/p test=TestX\n" +
		"100 g=1 clock=1 fork child=7\n" +
		"150 g=7 clock=1 use site=3 obj=0xc000010\n" +
		"160 g=1 clock=2 dispose site=2 obj=0xc000010\n"
	if out.String() != want {
		t.Fatalf("Dump:\n%s\nwant:\n%s", out.String(), want)
	}
	r, _ = NewReader(bytes.NewReader(encode(t, b)))
	out.Reset()
	if err := Dump(&out, r, 1); err != nil || bytes.Count(out.Bytes(), []byte("\n")) != 2 {
		t.Fatalf("Dump with limit 1: %v\n%s", err, out.String())
	}
}
