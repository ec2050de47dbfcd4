package wafl

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"testing"
)

const modulePath = "github.com/memorder/wafl"

// runtimeImportPaths returns the import paths of RuntimePackages.
func runtimeImportPaths() []string {
	var paths []string
	for _, p := range RuntimePackages {
		paths = append(paths, modulePath+"/"+p)
	}
	return paths
}

// goList runs go list in the module root with extra environment and
// returns its standard output.
func goList(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// listedPackage is the part of go list -json a test here reads.
type listedPackage struct {
	ImportPath  string
	Dir         string
	Standard    bool
	Module      *struct{ Path string }
	Imports     []string
	GoFiles     []string
	SFiles      []string
	CgoFiles    []string
	CFiles      []string
	CXXFiles    []string
	MFiles      []string
	HFiles      []string
	FFiles      []string
	SwigFiles   []string
	SysoFiles   []string
	EmbedFiles  []string
	Ignored     []string `json:"IgnoredGoFiles"`
	IgnoredMore []string `json:"IgnoredOtherFiles"`
}

func decodePackages(t *testing.T, data []byte) []*listedPackage {
	t.Helper()
	var pkgs []*listedPackage
	dec := json.NewDecoder(strings.NewReader(string(data)))
	for {
		p := new(listedPackage)
		if err := dec.Decode(p); err == io.EOF {
			return pkgs
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
}

// runtimeGOOS are the systems whose build-constrained runtime files the
// import checks see.
var runtimeGOOS = []string{"linux", "darwin", "windows", "freebsd"}

// TestRuntimeImports keeps the runtime linked into users' test binaries
// free of dependencies beyond the standard library, the runtime packages
// themselves and the leaf modules in RuntimeRequires, on every system (a
// runtime file may be constrained to one).
func TestRuntimeImports(t *testing.T) {
	isRuntime := map[string]bool{}
	for _, p := range runtimeImportPaths() {
		isRuntime[p] = true
	}
	leaf := map[string]bool{}
	for _, r := range RuntimeRequires {
		mod, _, _ := strings.Cut(r, " ")
		leaf[mod] = true
	}
	reported := map[string]bool{}
	for _, goos := range runtimeGOOS {
		args := append([]string{"-deps", "-json=ImportPath,Standard,Module,Imports"}, runtimeImportPaths()...)
		pkgs := decodePackages(t, goList(t, []string{"GOOS=" + goos, "GOARCH=amd64", "CGO_ENABLED=0"}, args...))
		importers := map[string][]string{}
		for _, p := range pkgs {
			for _, im := range p.Imports {
				importers[im] = append(importers[im], p.ImportPath)
			}
		}
		for _, p := range pkgs {
			if p.Standard || isRuntime[p.ImportPath] || reported[p.ImportPath] {
				continue
			}
			if p.Module != nil && leaf[p.Module.Path] {
				continue
			}
			reported[p.ImportPath] = true
			by := strings.Join(importers[p.ImportPath], ", ")
			switch {
			case p.Module != nil && p.Module.Path == modulePath:
				t.Errorf("the runtime imports %s (imported by %s, GOOS=%s), which is tool code: runtime packages import only the standard library, each other and RuntimeRequires; drop the import, or move the code into a runtime package", p.ImportPath, by, goos)
			case p.Module != nil:
				t.Errorf("the runtime imports %s of module %s (imported by %s, GOOS=%s), which is not in RuntimeRequires: drop the import; a module linked into users' test binaries changes their dependency graph (only a tiny leaf module may be added, to RuntimeRequires and RuntimeSums in wafl.go)", p.ImportPath, p.Module.Path, by, goos)
			default:
				t.Errorf("the runtime imports %s (imported by %s, GOOS=%s), which is neither standard, a runtime package nor in RuntimeRequires: drop the import", p.ImportPath, by, goos)
			}
		}
	}
}

// TestRuntimeFS keeps RuntimeFS exactly the runtime's source: every
// non-test .go and .s file of the runtime packages, those excluded by
// build constraints on this system included, and no other file.
func TestRuntimeFS(t *testing.T) {
	args := append([]string{"-json"}, runtimeImportPaths()...)
	want := map[string]bool{}
	lines := map[string][]string{} // directory -> files, for the embed lines to suggest
	for _, p := range decodePackages(t, goList(t, nil, args...)) {
		dir := strings.TrimPrefix(p.ImportPath, modulePath+"/")
		for kind, files := range map[string][]string{
			"cgo": p.CgoFiles, "C": p.CFiles, "C++": p.CXXFiles, "Objective-C": p.MFiles,
			"header": p.HFiles, "Fortran": p.FFiles, "SWIG": p.SwigFiles, "syso": p.SysoFiles, "embedded": p.EmbedFiles,
		} {
			for _, f := range files {
				t.Errorf("runtime package %s has the %s file %s: the runtime module holds only .go and .s files; remove it", dir, kind, f)
			}
		}
		var files []string
		files = append(files, p.GoFiles...)
		files = append(files, p.SFiles...)
		files = append(files, p.Ignored...)
		for _, f := range p.IgnoredMore {
			if strings.HasSuffix(f, ".s") {
				files = append(files, f)
			}
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			want[dir+"/"+f] = true
			lines[dir] = append(lines[dir], dir+"/"+f)
		}
	}
	have := map[string]bool{}
	err := fs.WalkDir(RuntimeFS, ".", func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			have[name] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	bad := false
	for _, f := range sortedKeys(want) {
		if !have[f] {
			bad = true
			t.Errorf("RuntimeFS lacks %s, a source file of runtime package %s: add it to the //go:embed lines of RuntimeFS in wafl.go", f, path.Dir(f))
		}
	}
	for _, f := range sortedKeys(have) {
		if !want[f] {
			bad = true
			t.Errorf("RuntimeFS has %s, which is not a non-test .go or .s file of a runtime package: remove it from the //go:embed lines of RuntimeFS in wafl.go", f)
		}
	}
	if bad {
		var b strings.Builder
		for _, dir := range RuntimePackages {
			files := lines[dir]
			sort.Strings(files)
			fmt.Fprintf(&b, "//go:embed %s\n", strings.Join(files, " "))
		}
		t.Errorf("the //go:embed lines of RuntimeFS should read:\n%s", b.String())
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestRuntimeFoldersHoldOnlyRuntime keeps tool code out of the runtime
// folders: a Go package under a runtime package's directory is a runtime
// package itself (in RuntimePackages) or does not belong there.
func TestRuntimeFoldersHoldOnlyRuntime(t *testing.T) {
	isRuntime := map[string]bool{}
	for _, p := range runtimeImportPaths() {
		isRuntime[p] = true
	}
	args := []string{"-e", "-f", "{{.ImportPath}}"}
	for _, p := range RuntimePackages {
		args = append(args, "./"+p+"/...")
	}
	for _, p := range strings.Fields(string(goList(t, nil, args...))) {
		if !isRuntime[p] {
			rel := strings.TrimPrefix(p, modulePath+"/")
			t.Errorf("%s is a Go package inside the runtime folder %s: the runtime folders hold only runtime code; move it out (tool code goes under internal/), or make it a runtime package (RuntimePackages and RuntimeFS in wafl.go)", rel, strings.SplitN(rel, "/", 2)[0])
		}
	}
}

// TestRuntimeSums keeps RuntimeSums in step with go.sum: exactly the
// lines of the modules in RuntimeRequires, at their versions, in go.sum's
// order.
func TestRuntimeSums(t *testing.T) {
	f, err := os.Open("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req := map[string]string{}
	for _, r := range RuntimeRequires {
		mod, ver, ok := strings.Cut(r, " ")
		if !ok {
			t.Fatalf("RuntimeRequires: %q is not \"path version\"", r)
		}
		req[mod] = ver
	}
	var want strings.Builder
	found := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && req[fields[0]] != "" && strings.TrimSuffix(fields[1], "/go.mod") == req[fields[0]] {
			want.WriteString(sc.Text() + "\n")
			found[fields[0]]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for mod, ver := range req {
		if found[mod] != 2 {
			t.Errorf("go.sum has %d lines for %s %s, want 2 (the module's and its go.mod's): run go mod download %s@%s", found[mod], mod, ver, mod, ver)
		}
	}
	if RuntimeSums != want.String() {
		t.Errorf("RuntimeSums in wafl.go disagrees with go.sum; it should read:\n%s", want.String())
	}
}

// TestWaflLinksNoRuntimeInit keeps the wafl command free of the runtime
// packages whose init reads WAFL_MODE (and may exit): it shares only abi,
// lcc and plans with the test binaries.
func TestWaflLinksNoRuntimeInit(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./cmd/wafl").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		switch strings.TrimPrefix(p, "github.com/memorder/wafl/") {
		case "hook", "record", "inject":
			t.Errorf("cmd/wafl links %s", p)
		}
	}
}

// TestRuntimeRequiresMatchGoMod keeps RuntimeRequires in step with go.mod.
func TestRuntimeRequiresMatchGoMod(t *testing.T) {
	for _, r := range RuntimeRequires {
		mod, ver, _ := strings.Cut(r, " ")
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", mod).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -m %s: %v\n%s", mod, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != ver {
			t.Errorf("RuntimeRequires has %s %s, go.mod has %s", mod, ver, got)
		}
	}
}
