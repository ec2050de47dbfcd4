package report

import (
	"bufio"
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// PanicKind classifies a Go panic message.
type PanicKind string

// The panic kinds a MEMORDER bug produces, and the rest.
const (
	NilDeref    PanicKind = "nil-deref"    // invalid memory address or nil pointer dereference (also a nil func call)
	NilMap      PanicKind = "nil-map"      // assignment to entry in nil map
	SendClosed  PanicKind = "send-closed"  // send on closed channel
	CloseClosed PanicKind = "close-closed" // close of closed channel
	CloseNil    PanicKind = "close-nil"    // close of nil channel
	// A sync.WaitGroup used out of order: Done before the matching Add,
	// Add for a new round before the previous Wait has returned (or
	// concurrently with it).
	WGNegative PanicKind = "waitgroup-negative" // sync: negative WaitGroup counter
	WGReuse    PanicKind = "waitgroup-reuse"    // sync: WaitGroup is reused before previous Wait has returned / misuse
	Timeout    PanicKind = "timeout"            // the testing package's -test.timeout panic
	OtherPanic PanicKind = "other"              // any other panic or fatal error
)

// Memorder reports whether k is one of the panics a MEMORDER bug causes.
func (k PanicKind) Memorder() bool {
	switch k {
	case NilDeref, NilMap, SendClosed, CloseClosed, CloseNil, WGNegative, WGReuse:
		return true
	}
	return false
}

// classify maps a panic message to its kind.
func classify(msg string) PanicKind {
	switch {
	case strings.Contains(msg, "invalid memory address or nil pointer dereference"):
		return NilDeref
	case strings.Contains(msg, "assignment to entry in nil map"):
		return NilMap
	case strings.Contains(msg, "send on closed channel"):
		return SendClosed
	case strings.Contains(msg, "close of closed channel"):
		return CloseClosed
	case strings.Contains(msg, "close of nil channel"):
		return CloseNil
	case strings.Contains(msg, "sync: negative WaitGroup counter"):
		return WGNegative
	case strings.Contains(msg, "sync: WaitGroup is reused before previous Wait has returned"),
		strings.Contains(msg, "sync: WaitGroup misuse: Add called concurrently with Wait"):
		return WGReuse
	case strings.HasPrefix(msg, "test timed out after"):
		return Timeout
	}
	return OtherPanic
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
	Panic string    `json:"panic"`
	Kind  PanicKind `json:"kind"`
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
		c.Kind = OtherPanic
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
