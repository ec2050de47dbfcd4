package wafl

import (
	"io/fs"
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimeImports keeps the runtime linked into users' test binaries
// free of dependencies beyond the standard library, the runtime packages
// themselves and the leaf modules in RuntimeRequires.
func TestRuntimeImports(t *testing.T) {
	args := []string{"list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{with .Module}}{{.Path}}{{end}}"}
	for _, p := range RuntimePackages {
		args = append(args, "./"+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{}
	for _, p := range RuntimePackages {
		allowed["github.com/memorder/wafl/"+p] = true
	}
	leaf := map[string]bool{}
	for _, r := range RuntimeRequires {
		mod, _, _ := strings.Cut(r, " ")
		leaf[mod] = true
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[1] == "true" || allowed[f[0]] {
			continue
		}
		if len(f) == 3 && leaf[f[2]] {
			continue
		}
		t.Errorf("runtime depends on %s, which is neither standard, a runtime package nor in RuntimeRequires", f[0])
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

// TestRuntimeFS checks that the embedded runtime has every runtime
// package's source and no test files end up in it.
func TestRuntimeFS(t *testing.T) {
	for _, p := range RuntimePackages {
		ents, err := fs.ReadDir(RuntimeFS, p)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				n++
			}
		}
		if n == 0 {
			t.Errorf("RuntimeFS has no source files for %s", p)
		}
	}
	if _, err := fs.Stat(RuntimeFS, "go.sum"); err != nil {
		t.Errorf("RuntimeFS lacks go.sum: %v", err)
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
