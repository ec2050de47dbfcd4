package instrument_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/txtar"

	"github.com/memorder/wafl/instrument"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/internal/build"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGolden instruments every testdata/golden/*.txtar case and compares
// each rewritten file with its want/<file> section (a file without one must
// come out unchanged), and the constructs left alone on purpose with its
// "skipped" section. Without -short all cases are also built into test
// binaries in one module, so the rewritten code type-checks and compiles,
// from exactly the files RewritePackage returned.
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/golden/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "go.mod"), "module example.com/golden\n\ngo 1.22\n")
	archives := map[string]*txtar.Archive{}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".txtar")
		ar, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		archives[name] = ar
		dir := filepath.Join(tmp, name)
		hasTest := false
		for _, f := range ar.Files {
			if strings.HasPrefix(f.Name, "want/") {
				continue
			}
			hasTest = hasTest || strings.HasSuffix(f.Name, "_test.go")
			writeFile(t, filepath.Join(dir, f.Name), string(f.Data))
		}
		if !hasTest {
			t.Fatalf("%s: every case needs a _test.go file so that it is built", p)
		}
	}
	units := loadUnits(t, tmp)
	alloc := &instrument.SiteAlloc{}
	rewritten := map[string]*instrument.Rewritten{}
	for _, u := range units {
		rw, err := instrument.RewritePackage(u, alloc)
		if err != nil {
			t.Fatalf("%s: %v", u.Path, err)
		}
		rewritten[strings.TrimPrefix(u.Path, "example.com/golden/")] = rw
	}
	allSites := alloc.Sites()
	if !testing.Short() {
		// Building is what -short skips.
		checkBuild(t, tmp, rewritten, allSites)
	}
	// Site ids are hashes (sites.ID); the goldens show each site's index in
	// the build's site table instead, so that they read in source order.
	ordinal := map[string]string{}
	for i, s := range allSites {
		ordinal[strconv.FormatUint(uint64(s.ID), 10)] = strconv.Itoa(i + 1)
	}
	siteArg := regexp.MustCompile(`(_wafl[A-Za-z]+\()([0-9]+)([,)])`)
	denseIDs := func(src []byte) []byte {
		return siteArg.ReplaceAllFunc(src, func(m []byte) []byte {
			sm := siteArg.FindSubmatch(m)
			n, ok := ordinal[string(sm[2])]
			if !ok {
				t.Errorf("site id %s not in the site table", sm[2])
				return m
			}
			return []byte(string(sm[1]) + n + string(sm[3]))
		})
	}
	names := make([]string, 0, len(archives))
	for n := range archives {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		ar := archives[name]
		t.Run(name, func(t *testing.T) {
			rw := rewritten[name]
			if rw == nil {
				t.Fatalf("package not loaded")
			}
			want := map[string][]byte{}
			for _, f := range ar.Files {
				if w, ok := strings.CutPrefix(f.Name, "want/"); ok {
					want[w] = f.Data
				}
			}
			changed := false
			var files []txtar.File
			var wantSkipped []byte
			for _, f := range ar.Files {
				if f.Name == "skipped" {
					wantSkipped = f.Data
				}
			}
			for _, f := range ar.Files {
				if strings.HasPrefix(f.Name, "want/") || f.Name == "skipped" {
					continue
				}
				files = append(files, f)
				var got []byte
				for _, rf := range rw.Files {
					if !rf.Generated && filepath.Base(rf.Path) == f.Name {
						got = rf.Src
					}
				}
				if got == nil {
					if _, ok := want[f.Name]; ok {
						t.Errorf("%s: not rewritten, but the golden has want/%s", f.Name, f.Name)
						changed = true
					}
					continue
				}
				got = denseIDs(bytes.ReplaceAll(got, []byte(tmp), []byte("$DIR")))
				files = append(files, txtar.File{Name: "want/" + f.Name, Data: got})
				if w, ok := want[f.Name]; !ok || !bytes.Equal(w, got) {
					changed = true
					if !*update {
						t.Errorf("%s: rewritten file differs from want/%s; got:\n%s", f.Name, f.Name, got)
					}
				}
			}
			// The constructs left alone on purpose, listed in "skipped".
			var gotSkipped []byte
			for _, n := range rw.Skipped {
				gotSkipped = append(gotSkipped, strings.ReplaceAll(n, tmp, "$DIR")+"\n"...)
			}
			if len(gotSkipped) > 0 {
				files = append(files, txtar.File{Name: "skipped", Data: gotSkipped})
			}
			if !bytes.Equal(gotSkipped, wantSkipped) {
				changed = true
				if !*update {
					t.Errorf("skipped constructs:\n%s\nwant:\n%s", gotSkipped, wantSkipped)
				}
			}
			if changed && *update {
				ar.Files = files
				if err := os.WriteFile(filepath.Join("testdata", "golden", name+".txtar"), txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadUnits loads the packages of the module in dir with their tests, as
// the builder does, and returns them as units in import-path order.
func loadUnits(t testing.TB, dir string) []instrument.Unit {
	t.Helper()
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
	byPath := map[string]*instrument.Unit{}
	get := func(path string) *instrument.Unit {
		if byPath[path] == nil {
			byPath[path] = &instrument.Unit{Path: path}
		}
		return byPath[path]
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("%s: %v", p.ID, e)
		}
		switch {
		case strings.HasSuffix(p.PkgPath, ".test") && p.Name == "main" && p.ForTest == "":
			// the generated test main
		case p.ForTest != "" && strings.HasSuffix(p.PkgPath, "_test"):
			get(p.ForTest).XTest = p
		case p.ForTest != "":
			get(p.ForTest).Pkg = p
		default:
			if u := get(p.PkgPath); u.Pkg == nil {
				u.Pkg = p
			}
		}
	}
	var units []instrument.Unit
	for _, u := range byPath {
		if u.Pkg == nil {
			t.Fatalf("%s: only external test files", u.Path)
		}
		u.Dir = filepath.Dir(u.Pkg.GoFiles[0])
		units = append(units, *u)
	}
	sort.Slice(units, func(i, j int) bool { return units[i].Path < units[j].Path })
	return units
}

// checkBuild builds the module in dir and checks that every package built
// from exactly the files RewritePackage returned, with its site table.
func checkBuild(t *testing.T, dir string, rewritten map[string]*instrument.Rewritten, allSites []sites.Site) {
	t.Helper()
	work := filepath.Join(dir, ".wafl")
	res, err := build.Build(context.Background(), build.Config{Dir: dir, WorkDir: work, Patterns: []string{"./..."}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(work, "build", "overlay.json"))
	if err != nil {
		t.Fatal(err)
	}
	var overlay struct{ Replace map[string]string }
	if err := json.Unmarshal(data, &overlay); err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Packages {
		name := strings.TrimPrefix(p.ImportPath, "example.com/golden/")
		if p.Err != nil {
			t.Errorf("%s: build failed: %v", name, p.Err)
			continue
		}
		tab, err := sites.Load(p.Sites)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tab.Sites, allSites) {
			t.Errorf("%s: the build's site table differs from the rewrite's", name)
		}
		for _, f := range rewritten[name].Files {
			got, err := os.ReadFile(overlay.Replace[f.Path])
			if err != nil || !bytes.Equal(got, f.Src) {
				t.Errorf("%s: the build's overlay has another %s than the rewrite (%v)", name, f.Path, err)
			}
		}
	}
	if len(res.Packages) != len(rewritten) {
		t.Errorf("built %d packages, rewrote %d", len(res.Packages), len(rewritten))
	}
}
