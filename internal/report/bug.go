package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

// FormatVersion is the version of the bug report JSON format.
const FormatVersion = 1

// Report is a bug report file: {"version":1,"bugs":[...]}.
type Report struct {
	Version int    `json:"version"`
	Bugs    []*Bug `json:"bugs"`
}

// Bug is one MEMORDER bug as reported to a person or a tool.
type Bug struct {
	Kind  plans.Kind `json:"kind"`
	Panic string     `json:"panic"` // the Go panic message
	// PanicKind classifies Panic ("nil-deref", "send-closed",
	// "waitgroup-negative", …); the WaitGroup kinds have SARIF rules of
	// their own.
	PanicKind abi.PanicKind `json:"panic_kind,omitempty"`
	Package   string        `json:"package"`
	Test      string        `json:"test"`
	// Delayed is ℓ1, where the delay was injected; Failing the site the
	// panicking goroutine was at.
	Delayed Location `json:"delayed"`
	Failing Location `json:"failing"`
	// Partner is ℓ2 of the pair when it is not the failing site: the
	// dispose of a use-after-dispose, or the use that ran during the delay
	// for a use-before-init that failed further on (Reordered).
	Partner *Location `json:"partner,omitempty"`
	// Recovered is set when user code recovered the panic (the test
	// failed without a crash); the runtime logged it before it happened.
	Recovered bool `json:"recovered,omitempty"`
	// Reordered is set for a use-before-init attributed through ℓ2 run
	// during the delay by goroutine PartnerGoroutine: the panic came later,
	// either in that goroutine or, when PartnerGoroutine is not the
	// panicking goroutine, in the delayed goroutine after its delay (it
	// acted on what it read before the delay, as the other one did).
	Reordered        bool  `json:"reordered,omitempty"`
	PartnerGoroutine int64 `json:"partner_goroutine,omitempty"`
	// PairFrom is where the bug's candidate pair came from when not from
	// the preparation run: "learn" (a recording run detect made for a plan
	// without candidates), "detect" (a detection run that also recorded),
	// "predicted" (a partner predicted for a late goroutine) or "static"
	// (a site the goroutine of a go statement may reach, paired with an
	// access of the trace; plans.Pair.From).
	PairFrom string `json:"pair_from,omitempty"`
	// How says how the crash came about (report.How: delay-in-progress,
	// after-delay, delay-decision, natural-schedule, preparation-run) and
	// HowDetail what the run log shows for it.
	// Spared are the delays skipped on the partner's side while the delay
	// that exposed the bug was in progress (abi.SkipPartner): which side
	// of the pair was delayed and which ran free.
	Spared    []Spared  `json:"spared,omitempty"`
	How       How       `json:"how,omitempty"`
	HowDetail string    `json:"how_detail,omitempty"`
	Delay     DelayInfo `json:"delay"`
	// PanickingGoroutine is the goroutine that panicked.
	PanickingGoroutine int64 `json:"panicking_goroutine"`
	// Run is the detection run that exposed the bug and Runs how many
	// detection runs of the test it took (runs recorded in the plan).
	Run       int       `json:"run"`
	Runs      int       `json:"runs"`
	Seed      uint64    `json:"seed"`
	Reproduce Reproduce `json:"reproduce"`
	// Goroutines are all goroutines of the crash, panicking one first;
	// Stacks is the crash text as Go printed it.
	Goroutines []Goroutine `json:"goroutines"`
	Stacks     string      `json:"stacks"`
}

// Location is a site of the site table.
type Location struct {
	Site uint32 `json:"site"`
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col,omitempty"`
	Op   string `json:"op,omitempty"`   // site kind: "store", "use", "close", ...
	Expr string `json:"expr,omitempty"` // slot expression
	Func string `json:"func,omitempty"` // enclosing function
	// Frame is the stack frame's function, for the failing site.
	Frame string `json:"frame,omitempty"`
	// Hoisted is the lock acquisition the site's delay was injected
	// before (the site is inside its critical section).
	Hoisted *sites.Guard `json:"hoisted,omitempty"`
	// CrashFile and CrashLine are, for the failing site, the line that
	// panicked when it is not the site's own: the dereference of a value
	// loaded at the site (a "load" site).
	CrashFile string `json:"crash_file,omitempty"`
	CrashLine int    `json:"crash_line,omitempty"`
	// CrashFunc is the function of CrashFile:CrashLine when the panic
	// happened in a callee of the site's frame (a library's method called
	// on the nil value, not the site's own line).
	CrashFunc string `json:"crash_func,omitempty"`
}

// Spared is a delay skipped at Location in Goroutine because the delay
// that exposed the bug held the other side of its pair.
type Spared struct {
	Location
	Goroutine uint64 `json:"goroutine"`
}

// spared returns the partner-side skips of delay d in lg.
func spared(tab *sites.Table, lg *Log, d *Delay) []Spared {
	if lg == nil || d == nil || d.ID == 0 {
		return nil
	}
	var out []Spared
	for _, sk := range lg.Skips {
		if sk.Why == abi.SkipPartner && sk.Delay == d.ID {
			out = append(out, Spared{Location: siteLocation(tab, sk.Site), Goroutine: sk.G})
		}
	}
	return out
}

// DelayInfo describes the delay that exposed the bug.
type DelayInfo struct {
	Ns         int64  `json:"ns"`                  // planned length
	ActualNs   int64  `json:"actual_ns,omitempty"` // measured, when it ended
	Goroutine  uint64 `json:"goroutine"`           // the delayed goroutine
	Object     uint64 `json:"object"`              // object (slot address) of the delayed access
	Instance   uint64 `json:"instance"`            // dynamic instance of ℓ1
	InProgress bool   `json:"in_progress"`         // not ended when the process crashed
}

// Reproduce says how to repeat the run.
type Reproduce struct {
	Wafl    string   `json:"wafl"`    // wafl command line
	Command []string `json:"command"` // the test binary and its arguments
	Env     []string `json:"env"`     // environment for Command
	// Plan is the bug's own copy of the plan the run read, Sites the site
	// table entries that plan mentions and BinaryHash the test binary it
	// ran ("sha256:<hex>"): what 'wafl reproduce' needs, kept under the
	// reports directory where later runs do not overwrite it.
	Plan       string `json:"plan,omitempty"`
	Sites      string `json:"sites,omitempty"`
	BinaryHash string `json:"binary_hash,omitempty"`
	// Report is the JSON report file the bug was saved in (relative to
	// where wafl ran), which 'wafl reproduce' takes.
	Report string `json:"report,omitempty"`
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func siteLocation(tab *sites.Table, id uint32) Location {
	loc := Location{Site: id}
	if tab != nil {
		if s, ok := tab.Lookup(id); ok {
			loc.File, loc.Line, loc.Col = s.File, s.Line, s.Col
			loc.Op, loc.Expr, loc.Func = s.Kind, s.Expr, s.Func
			loc.Hoisted = s.Guard
		}
	}
	return loc
}

func newBug(in RunInput, a *Attribution, c *Crash) *Bug {
	b := &Bug{
		Kind:               a.Kind,
		Panic:              c.Panic,
		PanicKind:          c.Kind,
		Package:            in.Package,
		Test:               in.Test,
		How:                a.How,
		Delayed:            siteLocation(in.Sites, a.Delay.Site),
		Failing:            siteLocation(in.Sites, a.Failing),
		PanickingGoroutine: c.Goroutine,
		Run:                in.Run,
		Runs:               len(in.Plan.Runs) + 1,
		Seed:               in.Seed,
		Goroutines:         userGoroutines(c.Goroutines),
		Stacks:             userStacks(c.Text),
		Delay: DelayInfo{
			Ns: a.Delay.Ns, ActualNs: a.Delay.Actual, Goroutine: a.Delay.G,
			Object: a.Delay.Obj, Instance: a.Delay.N, InProgress: !a.Delay.Ended,
		},
	}
	b.Failing.Frame = a.Frame.Func
	if b.Failing.File == "" {
		b.Failing.File, b.Failing.Line = a.Frame.File, a.Frame.Line
	} else if a.Frame.Line != 0 && (a.Frame.Line != b.Failing.Line || !sameFile(a.Frame.File, b.Failing.File)) {
		b.Failing.CrashFile, b.Failing.CrashLine = a.Frame.File, a.Frame.Line
	}
	if top, ok := crashFrame(c); ok && top != a.Frame && top.Func != a.Frame.Func {
		// The panic came from a function the site's frame called.
		b.Failing.CrashFile, b.Failing.CrashLine, b.Failing.CrashFunc = top.File, top.Line, top.Func
	}
	if a.Kind == plans.UseAfterDispose || a.Kind == plans.CheckThenAct || a.Reordered {
		p := siteLocation(in.Sites, a.Pair.Second)
		b.Partner = &p
	}
	b.Reordered = a.Reordered
	b.PartnerGoroutine = a.PartnerG
	b.PairFrom = a.Pair.From
	b.Reproduce = Reproduce{Wafl: in.Reproduce, Command: append([]string{in.Binary}, in.Args...), Env: in.Env}
	if b.Reproduce.Wafl == "" {
		b.Reproduce.Wafl = fmt.Sprintf("wafl detect --run %s --seed %d %s",
			shellQuote("^"+in.Test+"$"), in.Seed, in.Package)
	}
	return b
}

// sameFile reports whether the frame's file (possibly relative, from a
// -trimpath build) is the site's file.
func sameFile(frame, site string) bool {
	if filepath.IsAbs(frame) {
		return filepath.Clean(frame) == filepath.Clean(site)
	}
	return strings.HasSuffix(filepath.ToSlash(site), "/"+filepath.ToSlash(frame))
}

// WriteJSON writes bugs as a report file body.
func WriteJSON(w io.Writer, bugs []*Bug) error {
	if bugs == nil {
		bugs = []*Bug{}
	}
	data, err := json.MarshalIndent(Report{Version: FormatVersion, Bugs: bugs}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// ReadJSON reads a report file.
func ReadJSON(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bug report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("bug report %s: %v", path, err)
	}
	if r.Version != FormatVersion {
		return nil, fmt.Errorf("bug report %s: format version %d, this wafl reads version %d", path, r.Version, FormatVersion)
	}
	for i, b := range r.Bugs {
		if b == nil {
			return nil, fmt.Errorf("bug report %s: bug %d is null", path, i)
		}
		if !b.Kind.Known() {
			return nil, fmt.Errorf("bug report %s: bug %d: unknown kind %q", path, i, b.Kind)
		}
	}
	return &r, nil
}

// errWriter remembers the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func (l Location) String() string {
	s := fmt.Sprintf("%s:%d", l.File, l.Line)
	if l.Col > 0 {
		s += fmt.Sprintf(":%d", l.Col)
	}
	var what []string
	if l.Expr != "" {
		what = append(what, l.Expr)
	}
	if l.Op != "" {
		what = append(what, "("+l.Op+")")
	}
	if l.Func != "" {
		what = append(what, "in "+l.Func)
	}
	if len(what) > 0 {
		s += "  " + strings.Join(what, " ")
	}
	return s
}

// WriteText writes bugs for a person: one block per bug with the kind,
// the panic, the delayed and failing sites, how to reproduce it and the
// panicking goroutine's stack (all stacks with allStacks).
func WriteText(w io.Writer, bugs []*Bug, allStacks bool) error {
	ew := &errWriter{w: w}
	for i, b := range bugs {
		if i > 0 {
			ew.printf("\n")
		}
		ew.printf("%s in %s %s (run %d, seed %d)\n", strings.ToUpper(string(b.Kind)), b.Package, b.Test, b.Run, b.Seed)
		if b.Recovered {
			ew.printf("  panic:     %s (recovered by user code; the test failed)\n", b.Panic)
		} else {
			ew.printf("  panic:     %s\n", b.Panic)
		}
		if b.How != "" {
			ew.printf("  how:       %s\n", b.How.Describe())
			if b.HowDetail != "" {
				ew.printf("             %s\n", b.HowDetail)
			}
		}
		switch {
		case b.How == HowPreparation:
		case b.How == HowNatural || b.How == HowDecision:
			ew.printf("  delayed:   %s\n", b.Delayed)
		default:
			state := "ended"
			if b.Delay.InProgress {
				state = "in progress at the crash"
			}
			ew.printf("  delayed:   %s\n", b.Delayed)
			ew.printf("             %v delay in goroutine %d (%s)\n", fmtNs(b.Delay.Ns), b.Delay.Goroutine, state)
		}
		if plans.Guessed(b.PairFrom) {
			ew.printf("  pair:      %s: not seen in the trace; the crash confirms it\n", b.PairFrom)
		}
		for _, sp := range b.Spared {
			ew.printf("  spared:    %s\n", sp.Location)
			ew.printf("             goroutine %d, not delayed there: it was the partner's side of this delay\n", sp.Goroutine)
		}
		if b.Delayed.Hoisted != nil {
			ew.printf("             delayed before %s at %s:%d\n", b.Delayed.Hoisted.Call, b.Delayed.Hoisted.File, b.Delayed.Hoisted.Line)
		}
		ew.printf("  failing:   %s\n", b.Failing)
		switch {
		case b.Failing.CrashFunc != "":
			ew.printf("             crashed in %s at %s:%d, called from there\n", b.Failing.CrashFunc, b.Failing.CrashFile, b.Failing.CrashLine)
		case b.Failing.CrashLine != 0:
			ew.printf("             crashed at %s:%d, dereferencing the value loaded there\n", b.Failing.CrashFile, b.Failing.CrashLine)
		}
		ew.printf("             goroutine %d\n", b.PanickingGoroutine)
		if b.Partner != nil {
			switch b.Kind {
			case plans.UseAfterDispose:
				ew.printf("  disposed:  %s\n", *b.Partner)
			case plans.CheckThenAct:
				ew.printf("  checked:   %s\n", *b.Partner)
				ew.printf("             by another goroutine during the delay after the check\n")
			default:
				ew.printf("  used:      %s\n", *b.Partner)
				by := b.PanickingGoroutine
				if b.PartnerGoroutine != 0 {
					by = b.PartnerGoroutine
				}
				ew.printf("             during the delay, by goroutine %d\n", by)
				if by != b.PanickingGoroutine && b.PanickingGoroutine == int64(b.Delay.Goroutine) {
					ew.printf("             then the delayed goroutine acted on what it read before the delay\n")
				}
			}
		}
		// The raw command (test binary, WAFL_* environment) is in the
		// JSON report; the text names the short way.
		if b.Reproduce.Report != "" {
			ew.printf("  reproduce: wafl reproduce %s\n", b.Reproduce.Report)
		} else {
			ew.printf("  reproduce: %s\n", b.Reproduce.Wafl)
		}
		ew.printf("\n")
		for _, line := range stackLines(b, allStacks) {
			ew.printf("  %s\n", line)
		}
	}
	return ew.err
}

func fmtNs(ns int64) string {
	const ms = 1e6
	if ns%ms == 0 {
		return fmt.Sprintf("%dms", ns/ms)
	}
	return fmt.Sprintf("%.3gms", float64(ns)/ms)
}

// stackLines returns the crash text, only up to the end of the first
// goroutine's block unless all is set.
func stackLines(b *Bug, all bool) []string {
	lines := strings.Split(strings.TrimRight(b.Stacks, "\n"), "\n")
	if all {
		return lines
	}
	seen := 0
	for i, l := range lines {
		if isGoroutineHeader(l) {
			seen++
			if seen == 2 {
				return lines[:max(i-1, 0)]
			}
		}
	}
	return lines
}
