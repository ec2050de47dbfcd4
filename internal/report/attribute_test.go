package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

// attrFixture: sites 1 and 2 share line 10 of a.go (two slots on one
// line), site 3 is line 20, site 4 line 30.
func attrFixture() (*plans.Plan, *sites.Table) {
	tab := &sites.Table{Version: sites.Version, Sites: []sites.Site{
		{ID: 1, Kind: "store", File: "/m/p/a.go", Line: 10, Expr: "s.a"},
		{ID: 2, Kind: "use", File: "/m/p/a.go", Line: 10, Expr: "s.b"},
		{ID: 3, Kind: "store", File: "/m/p/a.go", Line: 20, Expr: "s.b"},
		{ID: 4, Kind: "use", File: "/m/p/a.go", Line: 30, Expr: "s.c"},
		{ID: 5, Kind: "use", File: "/m/p/a.go", Line: 40, Expr: "s.ch"},
		{ID: 6, Kind: "close", File: "/m/p/a.go", Line: 40, Expr: "s.ch"},
	}}
	p := newPlan(
		pairLoc(plans.UseBeforeInit, 3, 2, ms),   // init s.b at 20 → use at 10
		pairLoc(plans.UseAfterDispose, 4, 1, ms), // use s.c at 30 → dispose at 10
	)
	return p, tab
}

func crashAt(kind abi.PanicKind, g int64, file string, line int) *Crash {
	f := Frame{Func: "example.com/p.F", File: file, Line: line}
	return &Crash{Panic: string(kind), Kind: kind, Goroutine: g, Failing: f,
		Goroutines: []Goroutine{{ID: g, State: "running", Frames: []Frame{{Func: "panic"}, f, {Func: "example.com/p.G", File: "/m/p/b.go", Line: 5}}}}}
}

func logWith(ds ...*Delay) *Log {
	lg := &Log{byID: map[uint64]*Delay{}}
	for _, d := range ds {
		lg.Delays = append(lg.Delays, d)
		lg.byID[d.ID] = d
	}
	return lg
}

func withReorder(lg *Log, rs ...Reorder) *Log {
	lg.Reorders = append(lg.Reorders, rs...)
	return lg
}

func TestAttributeRules(t *testing.T) {
	p, tab := attrFixture()
	ubiDelay := &Delay{ID: 1, Site: 3, G: 10, Ns: ms}
	uadDelay := &Delay{ID: 2, Site: 4, G: 11, Ns: ms, Ended: true}
	cases := []struct {
		name    string
		lg      *Log
		c       *Crash
		kind    plans.Kind
		failing uint32
	}{
		{"use-before-init at a line with two sites", logWith(ubiDelay), crashAt(abi.PanicNilDeref, 20, "/m/p/a.go", 10), plans.UseBeforeInit, 2},
		{"use-before-init, trimpath frame", logWith(ubiDelay), crashAt(abi.PanicNilMap, 20, "p/a.go", 10), plans.UseBeforeInit, 2},
		{"use-before-init in the delayed goroutine", logWith(ubiDelay), crashAt(abi.PanicNilDeref, 10, "/m/p/a.go", 10), "", 0},
		{"send on closed channel is no use-before-init", logWith(ubiDelay), crashAt(abi.PanicSendClosed, 20, "/m/p/a.go", 10), "", 0},
		{"no delay at ℓ1", logWith(uadDelay), crashAt(abi.PanicNilDeref, 20, "/m/p/a.go", 10), "", 0},
		{"use-before-init after the delay ended", logWith(&Delay{ID: 1, Site: 3, G: 10, Ns: ms, Ended: true}), crashAt(abi.PanicNilDeref, 20, "/m/p/a.go", 10), "", 0},
		{"use-before-init, ended delay, read during it", withReorder(logWith(&Delay{ID: 1, Site: 3, G: 10, Ns: ms, Ended: true}), Reorder{First: 3, Second: 2, Delay: 1, G: 20, DelayG: 10}), crashAt(abi.PanicNilDeref, 20, "/m/p/a.go", 10), plans.UseBeforeInit, 2},
		{"use-after-dispose in the delayed goroutine", logWith(uadDelay), crashAt(abi.PanicSendClosed, 11, "/m/p/a.go", 30), plans.UseAfterDispose, 4},
		{"use-after-dispose in another goroutine", logWith(uadDelay), crashAt(abi.PanicNilDeref, 12, "/m/p/a.go", 30), "", 0},
		{"use-after-dispose before the delay ended", logWith(&Delay{ID: 2, Site: 4, G: 11}), crashAt(abi.PanicNilDeref, 11, "/m/p/a.go", 30), "", 0},
		{"not a MEMORDER panic", logWith(ubiDelay), crashAt(abi.PanicOther, 20, "/m/p/a.go", 10), "", 0},
		{"line without sites", logWith(ubiDelay), crashAt(abi.PanicNilDeref, 20, "/m/p/a.go", 11), "", 0},
		{"other file", logWith(ubiDelay), crashAt(abi.PanicNilDeref, 20, "/m/q/a.go", 10), "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, why := Attribute(p, tab, c.lg, c.c)
			if c.kind == "" {
				if a != nil {
					t.Fatalf("attributed as %s at %d; want no bug", a.Kind, a.Failing)
				}
				if why == "" {
					t.Error("no reason given")
				}
				return
			}
			if a == nil {
				t.Fatalf("not attributed: %s", why)
			}
			if a.Kind != c.kind || a.Failing != c.failing {
				t.Errorf("attributed %s failing %d, want %s %d", a.Kind, a.Failing, c.kind, c.failing)
			}
		})
	}
}

// A panic in uninstrumented code called from a site's line is attributed
// to that line (the nil value was passed on).
func TestAttributeDeeperFrame(t *testing.T) {
	p, tab := attrFixture()
	c := crashAt(abi.PanicNilDeref, 20, "/m/lib/lib.go", 99)
	c.Goroutines[0].Frames = append(c.Goroutines[0].Frames, Frame{Func: "example.com/p.H", File: "/m/p/a.go", Line: 10})
	a, why := Attribute(p, tab, logWith(&Delay{ID: 1, Site: 3, G: 10, Ns: ms}), c)
	if a == nil || a.Failing != 2 || a.Frame.Line != 10 {
		t.Fatalf("attribution %+v (%s)", a, why)
	}
}

// Among several delays at ℓ1, the one in progress at the crash wins.
func TestAttributePrefersInProgress(t *testing.T) {
	p, tab := attrFixture()
	lg := logWith(&Delay{ID: 1, Site: 3, G: 10, Ns: ms, Start: 5},
		&Delay{ID: 2, Site: 3, G: 12, Ns: ms, Start: 1},
		&Delay{ID: 3, Site: 3, G: 13, Ns: ms, Start: 9, Ended: true})
	lg.Delays[0].Ended = true
	a, _ := Attribute(p, tab, lg, crashAt(abi.PanicNilDeref, 20, "/m/p/a.go", 10))
	if a == nil || a.Delay.ID != 2 || !a.InProgress {
		t.Fatalf("attribution %+v, want delay 2 (in progress)", a)
	}
}

func TestAttributeReorder(t *testing.T) {
	p, tab := attrFixture()
	d := &Delay{ID: 1, Site: 3, G: 10, Ns: ms}
	lg := logWith(d)
	lg.Reorders = []Reorder{{T: 5, First: 3, Second: 2, Delay: 1, G: 20, DelayG: 10}}
	// Goroutine 20 touched the delayed object at ℓ2 (site 2) during the
	// delay, then double-closed at line 40.
	a, why := Attribute(p, tab, lg, crashAt(abi.PanicCloseClosed, 20, "/m/p/a.go", 40))
	if a == nil || !a.Reordered || a.Kind != plans.UseBeforeInit || a.Failing != 6 || a.Pair.Second != 2 {
		t.Fatalf("attribution %+v (%s); want reordered use-before-init failing at the close (6)", a, why)
	}
	// Another goroutine panicking there is not explained by the reorder.
	if a, _ := Attribute(p, tab, lg, crashAt(abi.PanicCloseClosed, 21, "/m/p/a.go", 40)); a != nil {
		t.Errorf("attributed a panic in a goroutine that did not run ℓ2: %+v", a)
	}
	// Nor is a panic at a line without sites.
	if a, _ := Attribute(p, tab, lg, crashAt(abi.PanicNilDeref, 20, "/m/p/a.go", 41)); a != nil {
		t.Errorf("attributed a panic at no site: %+v", a)
	}
	// Reaching ℓ1 itself during the delay (a second init) names ℓ1's
	// use-before-init pair.
	lg.Reorders = []Reorder{{T: 5, First: 3, Second: 3, Delay: 1, G: 20, DelayG: 10}}
	if a, _ := Attribute(p, tab, lg, crashAt(abi.PanicCloseClosed, 20, "/m/p/a.go", 40)); a == nil || a.Pair.Second != 2 {
		t.Errorf("second init during the delay: %+v", a)
	}
	// A delay at a use-after-dispose location does not count.
	lg = logWith(&Delay{ID: 1, Site: 4, G: 10, Ns: ms})
	lg.Reorders = []Reorder{{T: 5, First: 4, Second: 1, Delay: 1, G: 20, DelayG: 10}}
	if a, _ := Attribute(p, tab, lg, crashAt(abi.PanicCloseClosed, 20, "/m/p/a.go", 40)); a != nil {
		t.Errorf("attributed through a use-after-dispose delay: %+v", a)
	}
}

// The delayed goroutine itself crashing after its delay, while another
// goroutine reached ℓ1's object during the delay, is the reordered
// use-before-init too (quicclose on a loaded machine: both closers passed
// the nil check, the delayed one overslept and closed second).
func TestAttributeStale(t *testing.T) {
	p, tab := attrFixture()
	d := &Delay{ID: 1, Site: 3, G: 10, Ns: ms, Ended: true}
	lg := withReorder(logWith(d), Reorder{T: 5, First: 3, Second: 3, Delay: 1, G: 20, DelayG: 10})
	a, why := Attribute(p, tab, lg, crashAt(abi.PanicCloseClosed, 10, "/m/p/a.go", 40))
	if a == nil || !a.Reordered || !a.Stale || a.PartnerG != 20 || a.Kind != plans.UseBeforeInit ||
		a.Failing != 6 || a.Pair.Second != 2 || a.How != HowAfterDelay {
		t.Fatalf("attribution %+v (%s); want a stale reordered use-before-init failing at the close (6), partner goroutine 20", a, why)
	}
	// Only a panic two acting goroutines make counts.
	if a, _ := Attribute(p, tab, lg, crashAt(abi.PanicCloseNil, 10, "/m/p/a.go", 40)); a != nil {
		t.Errorf("attributed a close of a nil channel in the delayed goroutine: %+v", a)
	}
	// The delay must have ended: the delayed goroutine acts after it.
	d.Ended = false
	if a, _ := Attribute(p, tab, lg, crashAt(abi.PanicCloseClosed, 10, "/m/p/a.go", 40)); a != nil {
		t.Errorf("attributed a crash of the delayed goroutine during its delay: %+v", a)
	}
	d.Ended = true
	// No other goroutine during the delay: nothing to explain the crash.
	if a, _ := Attribute(p, tab, logWith(d), crashAt(abi.PanicCloseClosed, 10, "/m/p/a.go", 40)); a != nil {
		t.Errorf("attributed without a reorder: %+v", a)
	}
	// The panicking goroutine's own reorder wins over a stale one: goroutine
	// 10 also reached the object of goroutine 30's delay.
	d2 := &Delay{ID: 2, Site: 3, G: 30, Ns: ms}
	lg = withReorder(logWith(d, d2), Reorder{T: 5, First: 3, Second: 3, Delay: 1, G: 20, DelayG: 10},
		Reorder{T: 4, First: 3, Second: 2, Delay: 2, G: 10, DelayG: 30})
	if a, _ := Attribute(p, tab, lg, crashAt(abi.PanicCloseClosed, 10, "/m/p/a.go", 40)); a == nil || a.Stale || a.Delay.ID != 2 {
		t.Errorf("attribution %+v; want goroutine 10's own reorder (delay 2)", a)
	}
}

// A panic at the failing site of a bug the plan already records, reached
// through another pair's delay, is reported as that known bug, not as a
// new one or an unexplained failure.
func TestOutcomeKnownBug(t *testing.T) {
	p, tab := attrFixture()
	p.AddBug(plans.Bug{Kind: plans.UseAfterDispose, Delayed: 4, Failing: 4, Run: 1, Panic: "send on closed channel"})
	dir := t.TempDir()
	logPath := filepath.Join(dir, "run.log")
	// A delay at 3 (the use-before-init location), then a send on a
	// closed channel at line 30 (site 4) in goroutine 12.
	if err := os.WriteFile(logPath, []byte(`{"ev":"setup","t":0,"run":2,"seed":1}
{"ev":"delay","t":10,"id":1,"site":3,"g":11,"ns":1000000}
{"ev":"end","t":20,"id":1,"site":3,"g":11,"ns":1000000,"p":0.9}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr := "panic: send on closed channel\n\ngoroutine 12 [running]:\nexample.com/p.F()\n\t/m/p/a.go:30 +0x1\n"
	res, err := Outcome(RunInput{Plan: p, Sites: tab, LogPath: logPath, Stderr: []byte(stderr), ExitCode: 2, Run: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Fail || res.Known == nil || res.Known.Failing != 4 || !strings.Contains(res.Reason, "known use-after-dispose") {
		t.Fatalf("status %s known %+v reason %q", res.Status, res.Known, res.Reason)
	}
}

// The text report of a stale reordered use-before-init names the
// goroutine that ran ℓ2 during the delay, not the panicking one.
func TestTextStale(t *testing.T) {
	p, tab := attrFixture()
	d := &Delay{ID: 1, Site: 3, G: 10, Ns: ms, Ended: true}
	lg := withReorder(logWith(d), Reorder{T: 5, First: 3, Second: 3, Delay: 1, G: 20, DelayG: 10})
	c := crashAt(abi.PanicCloseClosed, 10, "/m/p/a.go", 40)
	a, why := Attribute(p, tab, lg, c)
	if a == nil {
		t.Fatal(why)
	}
	b := newBug(RunInput{Plan: p, Sites: tab, Package: "example.com/p", Test: "TestX", Run: 1}, a, c)
	if b.PartnerGoroutine != 20 || b.PanickingGoroutine != 10 || b.Partner == nil || b.Partner.Site != 2 {
		t.Fatalf("bug %+v", b)
	}
	var text bytes.Buffer
	if err := WriteText(&text, []*Bug{b}, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"during the delay, by goroutine 20", "then the delayed goroutine acted on what it read before the delay", "goroutine 10"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// A double close on the natural schedule, in a goroutine the log shows
// going through a check-then-act location (skipped there by
// interference), is credited to that location: the check sat in a helper
// that had returned, so only the log ties the act to it (fsnotify
// v1.5.4's Close).
func TestCreditCheckActFromLog(t *testing.T) {
	tab := &sites.Table{Version: sites.Version, Sites: []sites.Site{
		{ID: 7, Kind: "use", File: "/m/p/a.go", Line: 66, Expr: "w.done", Func: "(*W).isClosed"},
		{ID: 8, Kind: "close", File: "/m/p/a.go", Line: 80, Expr: "w.done", Func: "(*W).Close"},
	}}
	p := newPlan(pairLoc(plans.CheckThenAct, 7, 7, ms))
	lg := logWith(&Delay{ID: 1, Site: 7, G: 3, Ns: ms, Ended: true})
	lg.Skips = []Skip{{T: 5, Site: 7, G: 134, N: 82, Why: "interference", By: 7}}
	a := creditPlanned(p, tab, lg, crashAt(abi.PanicCloseClosed, 134, "/m/p/a.go", 80))
	if a == nil || a.Kind != plans.CheckThenAct || a.Failing != 8 || a.How != HowNatural || a.Delay.Site != 7 {
		t.Fatalf("credit %+v; want check-then-act at the close (8), natural schedule", a)
	}
	// A goroutine the log does not show at the check is not credited.
	if a := creditPlanned(p, tab, lg, crashAt(abi.PanicCloseClosed, 135, "/m/p/a.go", 80)); a != nil {
		t.Errorf("credited a goroutine that never reached the check: %+v", a)
	}
	// Nor a panic two acting goroutines do not make.
	if a := creditPlanned(p, tab, lg, crashAt(abi.PanicCloseNil, 134, "/m/p/a.go", 80)); a != nil {
		t.Errorf("credited a close of a nil channel: %+v", a)
	}
	// Nor a panic at no instrumented site.
	if a := creditPlanned(p, tab, lg, crashAt(abi.PanicCloseClosed, 134, "/m/p/b.go", 12)); a != nil {
		t.Errorf("credited a panic at no site: %+v", a)
	}
}

// TestAttributeIgnoresDelaysAfterThePanic: a goroutine runs its deferred
// calls while it panics; a delay in one of them (a deferred Close passing
// a planned check) began after the operation that panicked and cannot
// have caused it. The delay before the panic is credited, as in go-stomp's
// Unsubscribe (the check delay of its wait loop; the crash 200 ms later;
// then the deferred MustDisconnect's checks).
func TestAttributeIgnoresDelaysAfterThePanic(t *testing.T) {
	const file = "/m/p/s.go"
	tab := &sites.Table{Version: sites.Version, Sites: []sites.Site{
		{ID: 1, Kind: "check", File: file, Line: 10, Expr: "&s.state"},
		{ID: 2, Kind: "check", File: file, Line: 20, Expr: "c.closed"},
		{ID: 3, Kind: "send", File: file, Line: 30, Expr: "s.C"},
	}}
	p := newPlan(pairLoc(plans.CheckThenAct, 1, 1, ms), pairLoc(plans.CheckThenAct, 2, 2, ms))
	early := &Delay{ID: 1, Site: 1, G: 7, Ns: ms, Start: 10, Ended: true}
	late := &Delay{ID: 2, Site: 2, G: 7, Ns: ms, Start: 500, Ended: true}
	crash := crashAt(abi.PanicSendClosed, 7, file, 30)

	lg := logWith(early, late)
	lg.Panics = []Panic{{T: 400, Site: 3, G: 7, Kind: abi.PanicSendClosed}}
	a, why := Attribute(p, tab, lg, crash)
	if a == nil || a.Delay.ID != 1 || a.Delay.Site != 1 {
		t.Fatalf("attribution %+v (%s); want the delay at site 1, before the panic", a, why)
	}
	if len(lg.Delays) != 2 || lg.Delay(2) == nil {
		t.Fatal("Attribute changed the run log")
	}

	// A panic record at a site on none of the goroutine's frames is an
	// earlier panic the program recovered from: every delay counts, the
	// latest wins.
	lg = logWith(early, late)
	lg.Panics = []Panic{{T: 400, Site: 2, G: 7, Kind: abi.PanicCloseClosed}}
	if a, why := Attribute(p, tab, lg, crash); a == nil || a.Delay.ID != 2 {
		t.Fatalf("attribution %+v (%s); want the latest delay", a, why)
	}

	// Only delays after the panic: no bug.
	lg = logWith(late)
	lg.Panics = []Panic{{T: 400, Site: 3, G: 7, Kind: abi.PanicSendClosed}}
	if a, why := Attribute(p, tab, lg, crash); a != nil || !strings.Contains(why, "before the panic") {
		t.Fatalf("attribution %+v (%q); want none: the only delay began after the panic", a, why)
	}
}

// TestAttributeLostCheck: the delayed goroutine lost its compare-and-swap
// to another goroutine during its delay (the reorder record at the pair's
// ℓ2) and then crashed at a line without sites of an instrumented file —
// connect-go's Send writing to the pipe it never created, inside io.
func TestAttributeLostCheck(t *testing.T) {
	const file = "/m/p/call.go"
	tab := &sites.Table{Version: sites.Version, Sites: []sites.Site{
		{ID: 1, Kind: "check", File: file, Line: 98, Expr: "d.requestSent"},
		{ID: 2, Kind: "check", File: file, Line: 169, Expr: "d.requestSent"},
	}}
	p := newPlan(pairLoc(plans.CheckThenAct, 1, 2, ms))
	d := &Delay{ID: 1, Site: 1, G: 9, Obj: 77, Ns: 4 * ms, Start: 10, Ended: true}
	crash := &Crash{Panic: string(abi.PanicNilDeref), Kind: abi.PanicNilDeref, Goroutine: 9,
		Failing: Frame{Func: "io.(*PipeWriter).Write", File: "/usr/local/go/src/io/pipe.go", Line: 161},
		Goroutines: []Goroutine{{ID: 9, State: "running", Frames: []Frame{
			{Func: "io.(*PipeWriter).Write", File: "/usr/local/go/src/io/pipe.go", Line: 161},
			{Func: "example.com/p.(*call).Send", File: file, Line: 119},
		}}}}
	lost := Reorder{T: 20, First: 1, Second: 2, Delay: 1, G: 7, DelayG: 9, Obj: 77}

	a, why := Attribute(p, tab, withReorder(logWith(d), lost), crash)
	if a == nil || a.Kind != plans.CheckThenAct || a.Delay.ID != 1 || a.Frame.Line != 119 || a.PartnerG != 7 {
		t.Fatalf("attribution %+v (%s); want check-then-act at call.go:119, partner 7", a, why)
	}
	cases := []struct {
		name string
		lg   *Log
		c    *Crash
	}{
		{"no reorder", logWith(d), crash},
		{"reorder at a site that is no ℓ2 of the location", withReorder(logWith(d), Reorder{T: 20, First: 1, Second: 1, Delay: 1, G: 7, DelayG: 9, Obj: 77}), crash},
		{"delay still in progress", withReorder(logWith(&Delay{ID: 1, Site: 1, G: 9, Obj: 77, Ns: 4 * ms, Start: 10}), lost), crash},
		{"crash outside the instrumented files", withReorder(logWith(d), lost), crashAt(abi.PanicNilDeref, 9, "/m/q/other.go", 5)},
		{"not a panic of a lost check", withReorder(logWith(d), lost), crashAt(abi.PanicWGNegative, 9, file, 119)},
	}
	for _, c := range cases {
		if a, _ := Attribute(p, tab, c.lg, c.c); a != nil {
			t.Errorf("%s: attributed as %s; want no bug", c.name, a.Kind)
		}
	}
}
