package instrument_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/internal/build"
	"github.com/memorder/wafl/internal/trace"
)

// runModule writes the testdata/run cases as packages of one module,
// instruments them all and returns the module directory and the result.
func runModule(t *testing.T) (string, map[string]*build.Package) {
	t.Helper()
	paths, err := filepath.Glob("testdata/run/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no run cases: %v", err)
	}
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "go.mod"), "module example.com/run\n\ngo 1.22\n")
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".txtar")
		for _, f := range ar.Files {
			writeFile(t, filepath.Join(tmp, name, f.Name), string(f.Data))
		}
	}
	res, err := build.Build(context.Background(), build.Config{Dir: tmp, Patterns: []string{"./..."}})
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]*build.Package{}
	for _, p := range res.Packages {
		if p.Err != nil {
			t.Fatalf("%s: %v", p.ImportPath, p.Err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, "example.com/run/")] = p
	}
	return tmp, pkgs
}

// TestRun compiles instrumented programs and runs them: same output as the
// original, panics on the user's lines, and the recorded events.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs test binaries")
	}
	mod, pkgs := runModule(t)

	t.Run("same-output", func(t *testing.T) {
		orig := runOriginal(t, mod, "semantics", false)
		inst := runInstrumented(t, pkgs["semantics"], nil, false)
		if orig != inst {
			t.Errorf("instrumented output differs:\noriginal:\n%s\ninstrumented:\n%s", orig, inst)
		}
		for _, want := range []string{"order [a b] 1 2 10", "go arg=1,fval=10,lit=101", "testmain done", "recovered true", "go-arg panics in parent true", "defer close ok 1"} {
			if !strings.Contains(orig, want) {
				t.Errorf("original output lacks %q:\n%s", want, orig)
			}
		}
	})

	t.Run("panic-line", func(t *testing.T) {
		re := regexp.MustCompile(`panicline\.go:\d+`)
		orig := re.FindString(runOriginal(t, mod, "panicline", true))
		inst := re.FindString(runInstrumented(t, pkgs["panicline"], nil, true))
		if orig == "" || orig != inst {
			t.Errorf("panic location: original %q, instrumented %q", orig, inst)
		}
		if orig != "panicline.go:22" {
			t.Errorf("original panic at %q, want panicline.go:22", orig)
		}
	})

	t.Run("entries", func(t *testing.T) {
		orig := runOriginal(t, mod, "entries", false)
		inst := runInstrumented(t, pkgs["entries"], nil, false)
		if orig != inst || !strings.Contains(orig, "entries: 1 2 1 true false 0 7 false [reg key a]") {
			t.Errorf("instrumented output differs:\noriginal:\n%s\ninstrumented:\n%s", orig, inst)
		}
		p := pkgs["entries"]
		raw := filepath.Join(t.TempDir(), "raw")
		runInstrumented(t, p, []string{"WAFL_MODE=record", "WAFL_TRACE=" + raw}, false)
		arrows := raw + ".arrows"
		if _, err := trace.Convert(raw, arrows, trace.Meta{Package: p.ImportPath, Test: "TestRun"}); err != nil {
			t.Fatal(err)
		}
		checkEntryEvents(t, p, arrows)
	})

	t.Run("events", func(t *testing.T) {
		p := pkgs["events"]
		raw := filepath.Join(t.TempDir(), "raw")
		runInstrumented(t, p, []string{"WAFL_MODE=record", "WAFL_TRACE=" + raw}, false)
		arrows := raw + ".arrows"
		if _, err := trace.Convert(raw, arrows, trace.Meta{Package: p.ImportPath, Test: "TestRun"}); err != nil {
			t.Fatal(err)
		}
		checkEvents(t, p, arrows)
	})
}

// checkEntryEvents checks the events of entries.go: one object per map
// entry, tagged apart from addresses, the same for its store, use, check
// and dispose, different for another key or another map.
func checkEntryEvents(t *testing.T, p *build.Package, path string) {
	tab, err := sites.Load(p.Sites)
	if err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, path)
	// at returns the events of the site of kind on line of entries.go.
	at := func(kind string, line int) []event {
		t.Helper()
		var id uint32
		for _, s := range tab.Sites {
			if s.Kind == kind && s.Line == line && filepath.Base(s.File) == "entries.go" {
				id = s.ID
			}
		}
		if id == 0 {
			t.Fatalf("no %s site at entries.go:%d in %s", kind, line, p.Sites)
		}
		var found []event
		for _, e := range evs {
			if e.site == id {
				found = append(found, e)
			}
		}
		return found
	}
	one := func(kind string, line int, op abi.Op) uint64 {
		t.Helper()
		evs := at(kind, line)
		if len(evs) != 1 || evs[0].op != op {
			t.Fatalf("%s at line %d: events %+v, want one %v", kind, line, evs, op)
		}
		return evs[0].obj
	}
	stores := at("store", 22)
	if len(stores) != 2 || stores[0].op != abi.OpInit || stores[1].op != abi.OpInit {
		t.Fatalf("r.peers[k] = p: events %+v, want two inits", stores)
	}
	a, b := stores[0].obj, stores[1].obj
	use := one("use", 35, abi.OpUse)
	load := one("load", 40, abi.OpUse)
	chainUse := one("use", 68, abi.OpUse)
	checks := at("check", 46)
	del := one("delete", 47, abi.OpDispose)
	clear := one("dispose", 54, abi.OpDispose)
	remove := one("delete", 28, abi.OpDispose)
	sput := one("store", 57, abi.OpInit)
	sdel := one("delete", 58, abi.OpDispose)
	sload := one("load", 60, abi.OpUse)
	for name, o := range map[string]uint64{"a": a, "b": b, "sync": sput} {
		if !abi.IsEntry(o) {
			t.Errorf("entry %s: object %#x is not an entry id", name, o)
		}
	}
	if a == b || a == sput || b == sput {
		t.Errorf("entries share objects: a %#x b %#x sync %#x", a, b, sput)
	}
	if use != a || chainUse != a || del != a || load != b || clear != b || remove != b {
		t.Errorf("entry objects: a %#x, b %#x; use %#x chain %#x delete %#x, load %#x clear %#x remove %#x",
			a, b, use, chainUse, del, load, clear, remove)
	}
	if len(checks) != 2 || checks[0].obj != a || checks[1].obj != a || checks[0].op != abi.OpCheck {
		t.Errorf("comma-ok lookups: %+v, want two checks of %#x", checks, a)
	}
	if sdel != sput || sload != sput {
		t.Errorf("sync.Map entry: store %#x load %#x delete %#x", sput, sload, sdel)
	}
}

func readEvents(t *testing.T, path string) []event {
	t.Helper()
	r, err := trace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var evs []event
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len(); i++ {
			evs = append(evs, event{b.G[i], b.Obj[i], b.Clock[i], b.Site[i], abi.Op(b.Op[i])})
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

type event struct {
	g, obj uint64
	clock  uint32
	site   uint32
	op     abi.Op
}

func checkEvents(t *testing.T, p *build.Package, path string) {
	tab, err := sites.Load(p.Sites)
	if err != nil {
		t.Fatal(err)
	}
	r, err := trace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var evs []event
	for r.Next() {
		b := r.Batch()
		for i := 0; i < b.Len(); i++ {
			evs = append(evs, event{b.G[i], b.Obj[i], b.Clock[i], b.Site[i], abi.Op(b.Op[i])})
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	// find returns the only event at the site of kind whose expression is
	// expr in events.go on line.
	find := func(kind, expr string, line int, op abi.Op) event {
		t.Helper()
		var id uint32
		for _, s := range tab.Sites {
			if s.Kind == kind && s.Expr == expr && s.Line == line && filepath.Base(s.File) == "events.go" {
				id = s.ID
			}
		}
		if id == 0 {
			t.Fatalf("no %s site for %s at events.go:%d in %s", kind, expr, line, p.Sites)
		}
		var found []event
		for _, e := range evs {
			if e.site == id {
				found = append(found, e)
			}
		}
		if len(found) != 1 || found[0].op != op {
			t.Fatalf("site %d (%s %s line %d): events %+v, want one %v", id, kind, expr, line, found, op)
		}
		return found[0]
	}
	init := find("init", "s.conf", 14, abi.OpInit)
	use := find("use", "s.conf", 16, abi.OpUse)
	disp := find("dispose", "s.conf", 19, abi.OpDispose)
	closeEv := find("close", "done", 20, abi.OpDispose)
	send := find("send", "s.ch", 23, abi.OpUse)
	chInit := find("init", "s.ch", 15, abi.OpInit)
	// Stores whose nil-ness is decided at run time: Dyn runs with nil
	// values, then with non-nil ones.
	for _, c := range []struct {
		kind, expr string
		line       int
	}{{"store", "h.err", 35}, {"store", "h.fn", 36}, {"atomic-store", "h.cur", 37}, {"store", "b.val", 44}} {
		var id uint32
		for _, s := range tab.Sites {
			if s.Kind == c.kind && s.Expr == c.expr && s.Line == c.line {
				id = s.ID
			}
		}
		var ops []abi.Op
		var objs []uint64
		for _, e := range evs {
			if id != 0 && e.site == id {
				ops = append(ops, e.op)
				objs = append(objs, e.obj)
			}
		}
		if len(ops) != 2 || ops[0] != abi.OpDispose || ops[1] != abi.OpInit || objs[0] != objs[1] {
			t.Errorf("%s site %d for %s at line %d: ops %v on %x, want dispose then init on one slot", c.kind, id, c.expr, c.line, ops, objs)
		}
	}
	if init.obj != use.obj || init.obj != disp.obj || init.obj == 0 {
		t.Errorf("s.conf events on different objects: init %x use %x dispose %x", init.obj, use.obj, disp.obj)
	}
	if init.g != use.g || init.g != send.g || disp.g == init.g || closeEv.g != disp.g {
		t.Errorf("goroutines: init %d use %d send %d dispose %d close %d", init.g, use.g, send.g, disp.g, closeEv.g)
	}
	if send.obj == chInit.obj {
		t.Errorf("send's object is the slot %x, want the channel", send.obj)
	}
	var forks []event
	for _, e := range evs {
		if e.op == abi.OpFork {
			forks = append(forks, e)
		}
	}
	ok := false
	for _, f := range forks {
		if f.g == init.g && f.obj == disp.g {
			ok = true
		}
	}
	if !ok {
		t.Errorf("no fork event from the parent %d to the child %d: %+v", init.g, disp.g, forks)
	}
}

// runOriginal runs the package's tests uninstrumented and returns their
// output without the test framework's lines.
func runOriginal(t *testing.T, mod, pkg string, wantFail bool) string {
	t.Helper()
	cmd := exec.Command("go", "test", "-count=1", "-v", "./"+pkg)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if (err != nil) != wantFail {
		t.Fatalf("go test %s: %v\n%s", pkg, err, out)
	}
	return testOutput(string(out))
}

func runInstrumented(t *testing.T, p *build.Package, env []string, wantFail bool) string {
	t.Helper()
	cmd := exec.Command(p.Binary, "-test.v", "-test.count=1")
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if (err != nil) != wantFail {
		t.Fatalf("%s: %v\n%s", p.Binary, err, out)
	}
	return testOutput(string(out))
}

var frameworkLine = regexp.MustCompile(`^(=== RUN|--- PASS|--- FAIL|PASS$|FAIL|ok |exit status)`)

func testOutput(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !frameworkLine.MatchString(l) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestHelpersInline checks that with the hooks off a site costs an inlined
// mode check: the generated helpers must stay within the compiler's
// inlining budget (hook.CurrentMode must stay cheap too).
func TestHelpersInline(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles an instrumented package")
	}
	mod, pkgs := runModule(t)
	build := filepath.Join(mod, ".wafl", "build")
	for _, c := range []struct {
		pkg            string
		generic, plain []string
	}{
		{"semantics", instrument.InlineHelpers, nil},
		{"entries", instrument.InlineEntryHelpers, instrument.InlineSyncHelpers},
	} {
		p := pkgs[c.pkg]
		cmd := exec.Command("go", "test", "-c", "-o", os.DevNull, "-vet=off",
			"-overlay", filepath.Join(build, "overlay.json"),
			"-modfile", filepath.Join(build, "go.mod"), "-mod=mod",
			"-gcflags="+p.ImportPath+"=-m"+os.Getenv("WAFL_DEBUG_INLINE"), "./"+c.pkg)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if os.Getenv("WAFL_DEBUG_INLINE") != "" {
			t.Logf("%s", out)
		}
		for _, h := range c.generic {
			if !regexp.MustCompile(`can inline ` + h + `\[go\.shape`).Match(out) {
				t.Errorf("%s: %s is not inlinable any more", c.pkg, h)
			}
		}
		for _, h := range c.plain {
			if !regexp.MustCompile(`can inline ` + h + ` `).Match(out) {
				t.Errorf("%s: %s is not inlinable any more", c.pkg, h)
			}
		}
	}
}
