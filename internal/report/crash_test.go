package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorder/wafl/abi"
)

// The testdata/crash files are real outputs of Go 1.26 test binaries
// (go test -c; file paths under /tmp/cx).
func TestParseCrashFiles(t *testing.T) {
	cases := []struct {
		file       string
		kind       abi.PanicKind
		panic      string
		recovered  bool
		fatal      bool
		goroutine  int64
		failFunc   string
		failLine   int
		goroutines int // at least
	}{
		{"repanicked.txt", abi.PanicNilDeref, "runtime error: invalid memory address or nil pointer dereference", true, false, 19, "cx.TestNil", 6, 1},
		{"goroutine_all.txt", abi.PanicNilDeref, "runtime error: invalid memory address or nil pointer dereference", false, false, 20, "cx.TestGo.func1", 10, 3},
		{"nil_map.txt", abi.PanicNilMap, "assignment to entry in nil map", true, false, 19, "cx.TestMap", 7, 1},
		{"send_closed.txt", abi.PanicSendClosed, "send on closed channel", true, false, 7, "cx.TestSend", 9, 1},
		{"close_closed.txt", abi.PanicCloseClosed, "close of closed channel", false, false, 8, "cx.TestCloseClosed.func1", 3, 1},
		{"close_nil.txt", abi.PanicCloseNil, "close of nil channel", true, false, 0, "cx.TestCloseNil", 4, 1},
		{"nil_func_system.txt", abi.PanicNilDeref, "runtime error: invalid memory address or nil pointer dereference", false, false, 20, "cx.TestGoFunc.func1", 5, 3},
		{"multiline.txt", abi.PanicOther, "line one\nline two", true, false, 19, "cx.TestMulti", 6, 1},
		{"fatal_map.txt", abi.PanicOther, "concurrent map writes", false, true, 0, "cx.TestDeadlockMap.func1", 7, 1},
		{"timeout.txt", abi.PanicTimeout, "test timed out after 200ms\nrunning tests:\n\tTestSlow (0s)", false, false, 17, "time.goFunc", 0, 2},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "crash", c.file))
			if err != nil {
				t.Fatal(err)
			}
			cr := ParseCrash(data)
			if cr == nil {
				t.Fatal("no crash found")
			}
			if cr.Kind != c.kind || cr.Panic != c.panic || cr.Recovered != c.recovered || cr.Fatal != c.fatal {
				t.Errorf("kind %s panic %q recovered %v fatal %v; want %s %q %v %v", cr.Kind, cr.Panic, cr.Recovered, cr.Fatal, c.kind, c.panic, c.recovered, c.fatal)
			}
			if c.goroutine != 0 && cr.Goroutine != c.goroutine {
				t.Errorf("panicking goroutine %d, want %d", cr.Goroutine, c.goroutine)
			}
			if c.failLine != 0 && (cr.Failing.Func != c.failFunc || cr.Failing.Line != c.failLine || !strings.HasPrefix(cr.Failing.File, "/tmp/cx/")) {
				t.Errorf("failing frame %+v, want %s at line %d", cr.Failing, c.failFunc, c.failLine)
			}
			if len(cr.Goroutines) < c.goroutines {
				t.Errorf("%d goroutines, want ≥ %d", len(cr.Goroutines), c.goroutines)
			}
			if cr.Panicking() == nil || !strings.HasPrefix(cr.Text, "panic: ") && !strings.HasPrefix(cr.Text, "fatal error: ") {
				t.Errorf("panicking goroutine %v, text starts %q", cr.Panicking(), cr.Text[:min(len(cr.Text), 20)])
			}
			for _, g := range cr.Goroutines {
				for _, f := range g.Frames {
					if f.Func == "" || f.File == "" || f.Line == 0 {
						t.Errorf("goroutine %d: incomplete frame %+v", g.ID, f)
					}
				}
			}
		})
	}
}

func TestParseCrashCreatedBy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "crash", "goroutine_all.txt"))
	if err != nil {
		t.Fatal(err)
	}
	g := ParseCrash(data).Panicking()
	if g.Parent != 19 || g.CreatedBy == nil || g.CreatedBy.Func != "cx.TestGo" || g.CreatedBy.Line != 10 || g.State != "running" {
		t.Errorf("goroutine %+v created by %+v", g, g.CreatedBy)
	}
	if len(g.Frames) != 1 {
		t.Errorf("frames %+v; the created-by line is not a frame", g.Frames)
	}
}

// Before Go 1.25 a re-panic printed the panic twice.
func TestParseCrashOldRecoveredFormat(t *testing.T) {
	text := `=== RUN   TestX
panic: a log line that looks like a panic
--- FAIL: TestX (0.00s)
panic: runtime error: invalid memory address or nil pointer dereference [recovered]
	panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4f6e2a]

goroutine 6 [running]:
testing.tRunner.func1.2({0x51b2a0, 0x6a1e40})
	/usr/lib/go/src/testing/testing.go:1545 +0x238
testing.tRunner.func1()
	/usr/lib/go/src/testing/testing.go:1548 +0x397
panic({0x51b2a0?, 0x6a1e40?})
	/usr/lib/go/src/runtime/panic.go:914 +0x21f
example.com/p.(*Server).handle(...)
	/src/p/server.go:42
example.com/p.TestX(0xc000007860?)
	/src/p/server_test.go:9 +0x2a
testing.tRunner(0xc000007860, 0x5637a8)
	/usr/lib/go/src/testing/testing.go:1595 +0xff
created by testing.(*T).Run in goroutine 1
	/usr/lib/go/src/testing/testing.go:1648 +0x3ad
exit status 2
FAIL	example.com/p	0.004s
`
	c := ParseCrash([]byte(text))
	if c == nil {
		t.Fatal("no crash")
	}
	if !c.Recovered || c.Kind != abi.PanicNilDeref || c.Goroutine != 6 {
		t.Errorf("recovered %v kind %s goroutine %d", c.Recovered, c.Kind, c.Goroutine)
	}
	if c.Failing != (Frame{Func: "example.com/p.(*Server).handle", File: "/src/p/server.go", Line: 42}) {
		t.Errorf("failing %+v", c.Failing)
	}
	if n := len(c.Goroutines[0].Frames); n != 6 {
		t.Errorf("%d frames, want 6 (go test's trailer is not a frame)", n)
	}
}

func TestParseCrashNone(t *testing.T) {
	for _, text := range []string{"", "ok\n", "PASS\n", "panic: printed by a test, no traceback\nFAIL\n"} {
		if c := ParseCrash([]byte(text)); c != nil {
			t.Errorf("%q parsed as a crash: %+v", text, c)
		}
	}
}

func TestInternalFrames(t *testing.T) {
	for fn, want := range map[string]bool{
		"panic":                                      true,
		"runtime.sigpanic":                           true,
		"internal/runtime/maps.fatal":                true,
		"testing.tRunner.func1.2":                    true,
		"github.com/memorder/wafl/inject.At":         true,
		"github.com/memorder/wafl/record.Add":        true,
		"github.com/memorder/wafl/hook.Use":          true,
		"github.com/memorder/wafl/internal/report.X": false,
		"example.com/runtime.F":                      false,
		"main.run":                                   false,
	} {
		if got := internalFrame(Frame{Func: fn}); got != want {
			t.Errorf("internalFrame(%s) = %v, want %v", fn, got, want)
		}
	}
	// The instrumenter's generated helpers sit between a panic and the
	// user's line (close(ch) happens inside _waflClose).
	helper := Frame{Func: "example.com/q._waflClose[...]", File: "/src/q/zz_wafl_helpers.go", Line: 47}
	if !internalFrame(helper) {
		t.Errorf("internalFrame(%+v) = false, want true", helper)
	}
	if internalFrame(Frame{Func: "example.com/q.(*Conn).Close", File: "/src/q/conn.go", Line: 9}) {
		t.Error("a user frame counted as internal")
	}
}

func BenchmarkParseCrash(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "crash", "nil_func_system.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if ParseCrash(data) == nil {
			b.Fatal("no crash")
		}
	}
}

func TestParseFileLine(t *testing.T) {
	for in, want := range map[string]Frame{
		"\t/a/b.go:336":                         {File: "/a/b.go", Line: 336},
		"\t/a/b.go:12 +0x2a":                    {File: "/a/b.go", Line: 12},
		"\t/a/b.go:5 +0xc fp=0x1 sp=0x2 pc=0x3": {File: "/a/b.go", Line: 5},
		"\t/dir with space/x:y.go:7 +0x1":       {File: "/dir with space/x:y.go", Line: 7},
		"\tC:/src/p/a.go:9 +0x1":                {File: "C:/src/p/a.go", Line: 9},
		"\t_testmain.go:58 +0xa5":               {File: "_testmain.go", Line: 58},
		"\t?:0":                                 {File: "?", Line: 0},
		"\tno line here":                        {File: "no line here"},
	} {
		f, n := parseFileLine(in)
		if f != want.File || n != want.Line {
			t.Errorf("parseFileLine(%q) = %q, %d; want %q, %d", in, f, n, want.File, want.Line)
		}
	}
}

// TestPanicMessages: every MEMORDER panic kind has the runtime's message,
// and that message classifies as the kind.
func TestPanicMessages(t *testing.T) {
	kinds := []abi.PanicKind{abi.PanicNilDeref, abi.PanicNilMap, abi.PanicSendClosed, abi.PanicCloseClosed,
		abi.PanicCloseNil, abi.PanicNilAssert, abi.PanicWGNegative, abi.PanicWGReuse, abi.PanicTimeout, abi.PanicOther}
	for _, k := range kinds {
		msg := panicText(k)
		if !k.Memorder() {
			if msg != "" {
				t.Errorf("%s: not a MEMORDER kind but has message %q", k, msg)
			}
			continue
		}
		if msg == "" {
			t.Errorf("%s: no message", k)
		} else if k == abi.PanicNilAssert {
			for _, m := range []string{msg + "*p.T", "interface conversion: p.Conn is nil, not *p.tcpConn"} {
				if got := classify(m); got != k {
					t.Errorf("classify(%q) = %s, want %s", m, got, k)
				}
			}
		} else if got := classify(msg); got != k {
			t.Errorf("classify(%q) = %s, want %s", msg, got, k)
		}
	}
}
