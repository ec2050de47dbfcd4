package report

import (
	"path/filepath"
	"testing"
)

// TestCrashFrame: the frame a report names as where the panic happened is
// the innermost one of the program's own, past the runtime's, wafl's
// generated helpers and the standard library's (a nil *sync.Mutex panics
// in sync; the library method that locked it is the crash).
func TestCrashFrame(t *testing.T) {
	std := filepath.Join(goroot, "sync", "mutex.go")
	c := &Crash{Goroutine: 7, Goroutines: []Goroutine{{ID: 7, Frames: []Frame{
		{Func: "runtime.panicmem", File: filepath.Join(goroot, "runtime", "panic.go"), Line: 262},
		{Func: "sync.(*Mutex).Lock", File: std, Line: 46},
		{Func: "example.com/lib.(*Conn).do", File: "/mod/lib/conn.go", Line: 31},
		{Func: "example.com/app.(*Client).Close", File: "/src/app/client.go", Line: 64},
	}}}}
	f, ok := crashFrame(c)
	if !ok || f.Func != "example.com/lib.(*Conn).do" || f.Line != 31 {
		t.Fatalf("crashFrame = %+v, %v; want the library's do at conn.go:31", f, ok)
	}
	// A module path without a dot is not the standard library.
	c.Goroutines[0].Frames[2] = Frame{Func: "hx.(*S).do", File: "/src/hx/s.go", Line: 9}
	if f, _ := crashFrame(c); f.Func != "hx.(*S).do" {
		t.Errorf("crashFrame = %+v, want hx's frame", f)
	}
	// -trimpath: relative files, judged by the import path.
	if !stdFrame(Frame{Func: "sync.(*Mutex).Lock", File: "sync/mutex.go"}) || stdFrame(Frame{Func: "example.com/lib.F", File: "example.com/lib/f.go"}) {
		t.Error("stdFrame misjudges a relative path")
	}
}
