package build

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestLoadSource: the roots (packages, test variants, external tests,
// a package another root imports) come out as packages.Load gives them —
// the same ids, names, files and type information, errors on the same
// packages — type-checked from source, with their other imports from
// export data.
func TestLoadSource(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list -export")
	}
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "go.mod"), "module example.com/src\n\ngo 1.22\n")
	writeFile(t, filepath.Join(tmp, "a", "a.go"), "package a\n\nimport \"strings\"\n\ntype T struct{ B strings.Builder }\n\nfunc New() *T { return &T{} }\n")
	writeFile(t, filepath.Join(tmp, "a", "a_test.go"), "package a\n\nimport \"testing\"\n\nfunc helper() int { return 1 }\n\nfunc TestA(t *testing.T) { _ = New() }\n")
	writeFile(t, filepath.Join(tmp, "a", "ax_test.go"), "package a_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/src/a\"\n\t\"example.com/src/b\"\n)\n\nfunc TestX(t *testing.T) { _ = a.New(); b.Use() }\n")
	writeFile(t, filepath.Join(tmp, "b", "b.go"), "package b\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/src/a\"\n)\n\nfunc Use() { fmt.Println(a.New().B.String()) }\n")
	writeFile(t, filepath.Join(tmp, "bad", "bad.go"), "package bad\n\nvar X int = \"s\"\n")
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
			packages.NeedImports | packages.NeedTypes | packages.NeedSyntax |
			packages.NeedTypesInfo | packages.NeedModule | packages.NeedForTest,
		Dir:   tmp,
		Tests: true,
	}
	want, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	got, err := loadSource(context.Background(), cfg, []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ps []*packages.Package) []string {
		var s []string
		for _, p := range ps {
			s = append(s, p.ID)
		}
		slices.Sort(s)
		return s
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("ids:\n got %v\nwant %v", ids(got), ids(want))
	}
	byID := map[string]*packages.Package{}
	for _, p := range want {
		byID[p.ID] = p
	}
	checked := 0
	for _, p := range got {
		w := byID[p.ID]
		if p.Name != w.Name || p.PkgPath != w.PkgPath || p.ForTest != w.ForTest || !slices.Equal(p.CompiledGoFiles, w.CompiledGoFiles) {
			t.Errorf("%s: %s %s %q %v, want %s %s %q %v", p.ID, p.Name, p.PkgPath, p.ForTest, p.CompiledGoFiles, w.Name, w.PkgPath, w.ForTest, w.CompiledGoFiles)
		}
		if p.Name == "main" && strings.HasSuffix(p.PkgPath, ".test") {
			continue // the generated test main is not checked
		}
		if (len(p.Errors) > 0) != (len(w.Errors) > 0) || p.IllTyped != w.IllTyped {
			t.Errorf("%s: errors %v (ill-typed %v), want %v (%v)", p.ID, p.Errors, p.IllTyped, w.Errors, w.IllTyped)
		}
		if p.Types == nil || p.TypesInfo == nil || p.Fset == nil || len(p.Syntax) != len(w.Syntax) {
			t.Errorf("%s: types %v, info %v, %d files of syntax (want %d)", p.ID, p.Types, p.TypesInfo != nil, len(p.Syntax), len(w.Syntax))
			continue
		}
		if len(p.TypesInfo.Defs) != len(w.TypesInfo.Defs) || len(p.TypesInfo.Uses) != len(w.TypesInfo.Uses) {
			t.Errorf("%s: %d defs, %d uses; want %d, %d", p.ID, len(p.TypesInfo.Defs), len(p.TypesInfo.Uses), len(w.TypesInfo.Defs), len(w.TypesInfo.Uses))
		}
		checked++
		// An import of another root is that root's package itself.
		for path, imp := range p.Imports {
			if strings.HasPrefix(path, "example.com/src/") && imp.Types != nil {
				var found bool
				for _, ti := range p.Types.Imports() {
					found = found || ti == imp.Types
				}
				if !found && len(p.Errors) == 0 {
					t.Errorf("%s imports %s: not the root's *types.Package", p.ID, path)
				}
			}
		}
	}
	if checked != 5 {
		t.Errorf("%d packages compared, want 5", checked)
	}
	// b recompiled for a's test (b imports a, a's external test imports
	// b) is checked from source against a's test variant.
	for _, p := range got {
		if p.ID != "example.com/src/a_test [example.com/src/a.test]" {
			continue
		}
		bv, av := p.Imports["example.com/src/b"], p.Imports["example.com/src/a"]
		if bv == nil || bv.ID != "example.com/src/b [example.com/src/a.test]" || bv.Types == nil || len(bv.Errors) > 0 {
			t.Fatalf("b's test variant: %+v", bv)
		}
		if !slices.Contains(bv.Types.Imports(), av.Types) {
			t.Errorf("b [a.test] imports %v, not a's test variant %p", bv.Types.Imports(), av.Types)
		}
	}
	// The dependencies outside the roots have types from export data.
	for _, p := range got {
		if s := p.Imports["strings"]; s != nil && (s.Types == nil || s.Types.Scope().Lookup("Builder") == nil) {
			t.Errorf("%s: strings from export data: %v", p.ID, s.Types)
		}
	}
}
