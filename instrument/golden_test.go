package instrument

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/memorder/wafl/instrument/sites"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGolden instruments every testdata/golden/*.txtar case and compares
// each rewritten file with its want/<file> section (a file without one must
// come out unchanged), and the constructs left alone on purpose with its
// "skipped" section. Without -short all cases are also built into test
// binaries in one module, so the rewritten code type-checks and compiles.
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
	cfg := Config{Dir: tmp, WorkDir: filepath.Join(tmp, ".wafl"), Patterns: []string{"./..."}}
	var pkgs []*Package
	var allSites []sites.Site
	if testing.Short() {
		// Rewrite only; building the binaries is what -short skips.
		pkgs, allSites = rewriteOnly(t, cfg)
	} else {
		res, err := Build(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = res.Packages
		for _, p := range pkgs {
			if p.Err == nil {
				tab, err := sites.Load(p.Sites)
				if err != nil {
					t.Fatal(err)
				}
				allSites = tab.Sites
				break
			}
		}
	}
	// Site ids are hashes (sites.ID); the goldens show each site's index in
	// the build's site table instead, so that they read in source order.
	ordinal := map[string]string{}
	for i, s := range allSites {
		ordinal[strconv.FormatUint(uint64(s.ID), 10)] = strconv.Itoa(i + 1)
	}
	siteArg := regexp.MustCompile(`(_wafl[A-Za-z]+\()([0-9]+)(,)`)
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
	built := map[string]*Package{}
	for _, p := range pkgs {
		built[strings.TrimPrefix(p.ImportPath, "example.com/golden/")] = p
	}
	names := make([]string, 0, len(archives))
	for n := range archives {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		ar := archives[name]
		t.Run(name, func(t *testing.T) {
			p := built[name]
			if p == nil {
				t.Fatalf("package not in the result")
			}
			if p.Err != nil {
				t.Fatalf("build failed: %v", p.Err)
			}
			want := map[string][]byte{}
			for _, f := range ar.Files {
				if w, ok := strings.CutPrefix(f.Name, "want/"); ok {
					want[w] = f.Data
				}
			}
			out := filepath.Join(tmp, ".wafl", "build", "example.com", "golden", name)
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
				got, err := os.ReadFile(filepath.Join(out, f.Name))
				if os.IsNotExist(err) {
					got, err = os.ReadFile(filepath.Join(out, "_xtest", f.Name))
				}
				if os.IsNotExist(err) {
					if _, ok := want[f.Name]; ok {
						t.Errorf("%s: not rewritten, but the golden has want/%s", f.Name, f.Name)
						changed = true
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
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
			for _, n := range p.Skipped {
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

// rewriteOnly does what Build does up to writing the rewritten files.
func rewriteOnly(t *testing.T, cfg Config) ([]*Package, []sites.Site) {
	t.Helper()
	b, err := newBuilder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	units, err := b.load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	alloc := &siteAlloc{}
	var pkgs []*Package
	for _, u := range units {
		if u.pkg.Err == nil {
			u.pkg.Err = b.rewriteUnit(u, alloc)
		}
		pkgs = append(pkgs, u.pkg)
	}
	return pkgs, alloc.sites
}
