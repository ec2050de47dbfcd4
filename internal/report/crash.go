package report

import (
	"bufio"
	"bytes"
	"go/build"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/memorder/wafl/abi"
)

// panicMessages say how the Go runtime words each MEMORDER panic kind
// (abi.PanicKind), in the order classify tries them: a message containing
// one of match is of the kind; text is the whole message the runtime
// prints, which a recovered panic's crash is given (recoveredCrash; "":
// match[0]).
var panicMessages = []struct {
	kind  abi.PanicKind
	match []string
	text  string
}{
	{abi.PanicNilDeref, []string{"invalid memory address or nil pointer dereference"},
		"runtime error: invalid memory address or nil pointer dereference"},
	{abi.PanicNilMap, []string{"assignment to entry in nil map"}, ""},
	{abi.PanicSendClosed, []string{"send on closed channel"}, ""},
	{abi.PanicCloseClosed, []string{"close of closed channel"}, ""},
	{abi.PanicCloseNil, []string{"close of nil channel"}, ""},
	// A type assertion of a nil any; of another nil interface type,
	// classify matches the message's two parts.
	{abi.PanicNilAssert, []string{"interface conversion: interface {} is nil, not "}, ""},
	{abi.PanicWGNegative, []string{"sync: negative WaitGroup counter"}, ""},
	{abi.PanicWGReuse, []string{
		"sync: WaitGroup is reused before previous Wait has returned",
		"sync: WaitGroup misuse: Add called concurrently with Wait",
	}, ""},
}

// classify maps a panic message to its kind.
func classify(msg string) abi.PanicKind {
	for _, pm := range panicMessages {
		for _, m := range pm.match {
			if strings.Contains(msg, m) {
				return pm.kind
			}
		}
	}
	if strings.Contains(msg, "interface conversion: ") && strings.Contains(msg, " is nil, not ") {
		return abi.PanicNilAssert
	}
	if strings.HasPrefix(msg, "test timed out after") {
		return abi.PanicTimeout
	}
	return abi.PanicOther
}

// panicText is the runtime's message for a panic of kind k, "" for a kind
// the runtime has no message of its own for.
func panicText(k abi.PanicKind) string {
	for _, pm := range panicMessages {
		if pm.kind == k {
			if pm.text != "" {
				return pm.text
			}
			return pm.match[0]
		}
	}
	return ""
}

// Frame is one stack frame of a Go traceback.
type Frame struct {
	Func string `json:"func"` // fully qualified, e.g. "example.com/p.(*S).Close"
	File string `json:"file"`
	Line int    `json:"line"`
}

// Goroutine is one goroutine of a traceback.
type Goroutine struct {
	ID     int64   `json:"id"`
	State  string  `json:"state"` // "running", "chan receive", "sleep", ...
	Frames []Frame `json:"frames"`
	// CreatedBy is the go statement that started the goroutine and
	// Parent the goroutine that ran it (0 when not printed).
	CreatedBy *Frame `json:"created_by,omitempty"`
	Parent    int64  `json:"parent,omitempty"`
}

// Crash is a parsed fatal panic.
type Crash struct {
	// Panic is the panic message without the "panic: " prefix and the
	// " [recovered]" marker; for a fatal runtime error it is the message
	// after "fatal error: ".
	Panic string        `json:"panic"`
	Kind  abi.PanicKind `json:"kind"`
	// Fatal is set for "fatal error:" crashes (deadlock, concurrent map
	// writes), which are never MEMORDER panics.
	Fatal bool `json:"fatal,omitempty"`
	// Recovered is set when the testing package recovered the panic and
	// panicked again ("[recovered]", "[recovered, repanicked]").
	Recovered bool `json:"recovered,omitempty"`
	// Signal is the "[signal ...]" line, if any.
	Signal string `json:"signal,omitempty"`
	// Goroutine is the id of the panicking goroutine (the first one
	// printed) and Failing its first frame outside the Go runtime, the
	// testing package and the wafl runtime.
	Goroutine  int64       `json:"goroutine"`
	Failing    Frame       `json:"failing"`
	Goroutines []Goroutine `json:"goroutines"`
	// Text is the crash output from the panic line on.
	Text string `json:"-"`
}

// Panicking returns the panicking goroutine, or nil when the traceback
// printed none.
func (c *Crash) Panicking() *Goroutine {
	for i := range c.Goroutines {
		if c.Goroutines[i].ID == c.Goroutine {
			return &c.Goroutines[i]
		}
	}
	return nil
}

var (
	goroutineRE = regexp.MustCompile(`^goroutine (\d+)\b.*\[([^\]]*)\]:$`)
	recoveredRE = regexp.MustCompile(` \[recovered(?:, [a-z]+)?\]$`)
	createdRE   = regexp.MustCompile(`^created by (.+?)(?: in goroutine (\d+))?$`)
)

// ParseCrash finds the fatal panic in text — the crash output written by
// runtime/debug.SetCrashOutput, or a test binary's standard error with
// test output before the panic — and parses it. It returns nil when text
// holds no Go panic or fatal error followed by a goroutine traceback.
func ParseCrash(text []byte) *Crash {
	lines := splitLines(text)
	// The fatal panic is the last line starting "panic: " or "fatal
	// error: " that a goroutine header follows; earlier matches can be
	// test output.
	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if !strings.HasPrefix(l, "panic: ") && !strings.HasPrefix(l, "fatal error: ") {
			continue
		}
		if hasGoroutineAfter(lines[i+1:]) {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	c := &Crash{}
	first := lines[start]
	msg, fatal := strings.CutPrefix(first, "fatal error: ")
	if !fatal {
		msg = strings.TrimPrefix(first, "panic: ")
	}
	c.Fatal = fatal
	// The message continues on tab-indented lines (Go prints a multi-line
	// panic value with "\n\t"); older Go prints a re-panic as a
	// "\tpanic: " line; then come "[signal ...]" and a blank line.
	msgLines := []string{msg}
	inMsg := true
	i := start + 1
	for ; i < len(lines) && !isGoroutineHeader(lines[i]); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "[signal "):
			c.Signal = strings.Trim(l, "[]")
			inMsg = false
		case strings.HasPrefix(l, "\tpanic: "):
			c.Recovered = true
			inMsg = false
		case inMsg && strings.HasPrefix(l, "\t"):
			msgLines = append(msgLines, l[1:])
		default:
			inMsg = false
		}
	}
	msg = strings.Join(msgLines, "\n")
	if loc := recoveredRE.FindStringIndex(msg); loc != nil {
		msg, c.Recovered = msg[:loc[0]], true
	}
	c.Panic = msg
	if c.Fatal {
		c.Kind = abi.PanicOther
	} else {
		c.Kind = classify(c.Panic)
	}
	c.Text = strings.Join(lines[start:], "\n") + "\n"
	c.Goroutines = parseGoroutines(lines[i:])
	if len(c.Goroutines) > 0 {
		g := &c.Goroutines[0]
		c.Goroutine = g.ID
		if f, ok := failingFrame(g.Frames); ok {
			c.Failing = f
		}
	}
	return c
}

func splitLines(text []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		out = append(out, strings.TrimRight(sc.Text(), "\r"))
	}
	return out
}

// isGoroutineHeader reports whether l is "goroutine N [state]:".
func isGoroutineHeader(l string) bool {
	return strings.HasPrefix(l, "goroutine ") && goroutineRE.MatchString(l)
}

func matchGoroutineHeader(l string) []string {
	if !strings.HasPrefix(l, "goroutine ") {
		return nil
	}
	return goroutineRE.FindStringSubmatch(l)
}

func hasGoroutineAfter(lines []string) bool {
	for _, l := range lines {
		if isGoroutineHeader(l) {
			return true
		}
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return false
		}
	}
	return false
}

// parseGoroutines parses consecutive goroutine blocks.
func parseGoroutines(lines []string) []Goroutine {
	var out []Goroutine
	var cur *Goroutine
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := matchGoroutineHeader(l); m != nil {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			out = append(out, Goroutine{ID: id, State: m[2]})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil || l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "...") {
			continue
		}
		if strings.HasPrefix(l, "exit status ") || strings.HasPrefix(l, "FAIL") {
			break // go test's trailer
		}
		var file string
		var line int
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
			file, line = parseFileLine(lines[i+1])
			i++
		}
		if m := createdRE.FindStringSubmatch(l); m != nil {
			cur.CreatedBy = &Frame{Func: m[1], File: file, Line: line}
			if m[2] != "" {
				cur.Parent, _ = strconv.ParseInt(m[2], 10, 64)
			}
			continue
		}
		cur.Frames = append(cur.Frames, Frame{Func: funcName(l), File: file, Line: line})
	}
	return out
}

// funcName strips the argument list from a traceback function line.
func funcName(l string) string {
	if strings.HasSuffix(l, ")") {
		if i := strings.LastIndexByte(l, '('); i > 0 {
			return l[:i]
		}
	}
	return l
}

// parseFileLine parses "\t/path/file.go:123 +0x1f" (with GOTRACEBACK=
// system also " fp=... sp=... pc=...").
func parseFileLine(l string) (string, int) {
	l = strings.TrimPrefix(l, "\t")
	// The line number is the last ":digits" followed by the end or a
	// space; a path may itself contain colons and spaces.
	for end := len(l); end > 0; {
		i := strings.LastIndexByte(l[:end], ':')
		if i < 0 {
			break
		}
		j := i + 1
		for j < len(l) && l[j] >= '0' && l[j] <= '9' {
			j++
		}
		if j > i+1 && (j == len(l) || l[j] == ' ') {
			n, err := strconv.Atoi(l[i+1 : j])
			if err == nil {
				return l[:i], n
			}
		}
		end = i
	}
	return l, 0
}

// internalFrame reports whether f belongs to the machinery between a
// panic and the user code that caused it.
func internalFrame(f Frame) bool {
	fn := f.Func
	if strings.HasPrefix(filepath.Base(f.File), "zz_wafl_") || strings.Contains(fn, "._wafl") {
		return true // the instrumenter's generated helpers (e.g. the one that closes a channel)
	}
	return fn == "panic" || fn == "main.main" ||
		strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "testing.") ||
		strings.HasPrefix(fn, "internal/") ||
		runtimePkgFunc(fn)
}

// crashFrame returns the innermost frame of the panicking goroutine that
// is the program's own: not the runtime's, wafl's or the standard
// library's (a nil *sync.Mutex panics in sync, but the call that passed
// it is the user's or a library's).
func crashFrame(c *Crash) (Frame, bool) {
	g := c.Panicking()
	if g == nil {
		return Frame{}, false
	}
	for _, f := range g.Frames {
		if internalFrame(f) || stdFrame(f) {
			continue
		}
		return f, true
	}
	return Frame{}, false
}

// stdFrame reports whether f is in the standard library: its file is
// under GOROOT/src, or, for a file path a -trimpath build left relative,
// its import path's first element has no dot (sync.(*Mutex).Lock).
func stdFrame(f Frame) bool {
	if filepath.IsAbs(f.File) {
		return goroot != "" && strings.HasPrefix(filepath.Clean(f.File), goroot+string(filepath.Separator))
	}
	first, _, _ := strings.Cut(f.Func, "/")
	if !strings.Contains(f.Func, "/") {
		first, _, _ = strings.Cut(f.Func, ".")
	}
	return !strings.Contains(first, ".")
}

// goroot is GOROOT/src of the go command's standard library.
var goroot = func() string {
	if r := build.Default.GOROOT; r != "" {
		return filepath.Join(filepath.Clean(r), "src")
	}
	return ""
}()

// runtimePkgFunc reports whether fn belongs to the wafl runtime linked
// into test binaries.
func runtimePkgFunc(fn string) bool {
	rest, ok := strings.CutPrefix(fn, "github.com/memorder/wafl/")
	if !ok {
		return false
	}
	for _, p := range []string{"abi.", "hook.", "lcc.", "record.", "inject.", "plans."} {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}

func failingFrame(frames []Frame) (Frame, bool) {
	for _, f := range frames {
		if !internalFrame(f) {
			return f, true
		}
	}
	return Frame{}, false
}
