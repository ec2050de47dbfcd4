package reach

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/memorder/wafl/instrument"
	"github.com/memorder/wafl/instrument/sites"
)

// load loads testdata/mod as the builder does, rewrites its packages for
// their site table, and returns the loaded packages with the table.
func load(t *testing.T) ([]*packages.Package, []sites.Site) {
	t.Helper()
	dir, err := filepath.Abs("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
			packages.NeedImports | packages.NeedTypes | packages.NeedSyntax |
			packages.NeedTypesInfo | packages.NeedModule | packages.NeedForTest,
		Dir:   dir,
		Env:   append(os.Environ(), "GOWORK=off"),
		Tests: true,
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	u := instrument.Unit{Path: "example.com/mod/srv"}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("%s: %v", p.ID, e)
		}
		switch {
		case p.ForTest != "" && strings.HasSuffix(p.PkgPath, "_test"):
			u.XTest = p
		case p.ForTest != "":
			u.Pkg = p
		}
	}
	u.Dir = filepath.Join(dir, "srv")
	alloc := &instrument.SiteAlloc{}
	if _, err := instrument.RewritePackage(u, alloc); err != nil {
		t.Fatal(err)
	}
	return pkgs, alloc.Sites()
}

// site finds the site of the table of kind at file:line (base name).
func site(t *testing.T, table []sites.Site, kind, file string, line int) uint32 {
	t.Helper()
	for _, s := range table {
		if s.Kind == kind && filepath.Base(s.File) == file && s.Line == line {
			return s.ID
		}
	}
	t.Fatalf("no %s site at %s:%d", kind, file, line)
	return 0
}

func TestReach(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a module")
	}
	pkgs, table := load(t)
	prog, err := New(pkgs, table, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := prog.File("example.com/mod/srv")
	if err != nil {
		t.Fatal(err)
	}
	// Through the save and load of the file.
	path := filepath.Join(t.TempDir(), "srv.reach.json")
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	if f, err = Load(path); err != nil {
		t.Fatal(err)
	}

	accept := site(t, table, "use", "srv.go", 33)      // s.l.Accept() in serve
	dispose := site(t, table, "dispose", "srv.go", 45) // s.l = nil in Close
	pipe := site(t, table, "use", "srv.go", 23)        // *p.p in pipeConn.Close
	closeDone := site(t, table, "close", "srv.go", 49)
	other := site(t, table, "close", "srv.go", 71)
	sorted := site(t, table, "use", "srv.go", 53) // *s.n in the closure handed to sort.Slice
	deep6 := site(t, table, "use", "srv.go", 65)
	deep7 := site(t, table, "use", "srv.go", 66)
	goServe := site(t, table, "go", "srv.go", 27)

	run := f.Test("TestRunClose")
	want := map[uint32]int{accept: 2, dispose: 1, closeDone: 1, pipe: 2}
	for s, d := range want {
		if got, ok := run[s]; !ok || got != d {
			t.Errorf("TestRunClose reaches site %d at %d (%v), want %d", s, got, ok, d)
		}
	}
	if _, ok := run[other]; ok {
		t.Errorf("TestRunClose reaches Other's close, which only TestOther calls")
	}
	// The goroutine of go s.serve() starts in serve: its Accept at 0.
	if g := f.Go(goServe); g[accept] != 0 || len(g) == 0 {
		t.Errorf("go s.serve() reaches %v, want Accept (%d) at 0", g, accept)
	}
	if _, ok := f.Go(goServe)[dispose]; ok {
		t.Errorf("go s.serve() reaches Close's dispose")
	}
	// serve starts go s.handle(c): the test reaches handle's use, the
	// serve goroutine itself does not.
	handle := site(t, table, "use", "srv.go", 41)
	if _, ok := f.Go(goServe)[handle]; ok {
		t.Errorf("go s.serve() reaches the use of the goroutine it starts")
	}
	if run[handle] != 3 {
		t.Errorf("TestRunClose reaches handle's use at %d, want 3", run[handle])
	}
	if g := f.Test("TestOther"); g[other] != 1 {
		t.Errorf("TestOther (external test package) reaches %v, want Other's close at 1", g)
	}
	// A closure handed to another package counts as called where it is
	// created; a subtest's function the same.
	if g := f.Test("TestSubtest"); g[sorted] != 3 {
		t.Errorf("TestSubtest reaches %v, want the sort.Slice closure's load at 3", g)
	}
	// Depth: Deep (1) -> d0 (2) ... d6 is at 8 calls: beyond the bound.
	deep := f.Test("TestDeep")
	if _, ok := deep[deep6]; ok || f.Depth != DefaultDepth {
		t.Errorf("TestDeep reaches d6 beyond depth %d: %v", f.Depth, deep)
	}
	if _, ok := deep[deep7]; ok {
		t.Errorf("TestDeep reaches d7")
	}
	if f.Test("TestMissing") != nil || f.Go(12345) != nil {
		t.Errorf("unknown roots reach something")
	}
	if f.Truncated {
		t.Errorf("truncated")
	}

	// The cost bound.
	small, err := New(pkgs, table, Options{MaxFuncs: 3})
	if err != nil {
		t.Fatal(err)
	}
	sf, err := small.File("example.com/mod/srv")
	if err != nil {
		t.Fatal(err)
	}
	if !sf.Truncated || len(sf.Funcs) != 3 {
		t.Errorf("MaxFuncs 3: %d functions, truncated %v", len(sf.Funcs), sf.Truncated)
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"version": `{"version":2,"depth":6,"funcs":[]}`,
		"index":   `{"version":1,"depth":6,"funcs":[{"name":"f","calls":[3]}]}`,
		"root":    `{"version":1,"depth":6,"funcs":[],"tests":{"TestX":[0]}}`,
		"json":    `{`,
	} {
		path := filepath.Join(dir, name+".reach.json")
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if got := PathFor("/w/bin/a/b.sites.json"); got != "/w/bin/a/b.reach.json" {
		t.Errorf("PathFor: %s", got)
	}
}
