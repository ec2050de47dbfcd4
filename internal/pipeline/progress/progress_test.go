package progress

import (
	"bytes"
	"testing"
)

func TestProgressPlainLines(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf)
	p.Begin("prepare", 2)
	p.Done(0, "a: ok")
	p.Done(1, "b: bug")
	p.Close()
	want := "prepare [1/2] a: ok\nprepare [2/2] b: bug\n"
	if buf.String() != want {
		t.Errorf("progress wrote %q, want %q", buf.String(), want)
	}
}
