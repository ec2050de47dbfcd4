package plans_test

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// ownedTypes are the types whose values are plan state: a field of one,
// or anything reached through one (plan.Params.Stretch), is changed only
// by package plans. Params, Provenance and Run values of their own (the
// parameters of an analysis, the record of a run that ApplyRun appends)
// are descriptions other packages build.
var ownedTypes = map[string]bool{"Plan": true, "Location": true, "Pair": true, "Bug": true}

const plansPath = "github.com/memorder/wafl/plans"

// TestOnlyPlansChangesAPlan checks the claim of the package documentation:
// no non-test file of another package in the module assigns to a field of
// a plan type or to anything reached through one (x.F = v, x.F op= v,
// x.F++, plan.Params.Stretch = v, x.Locations[i] = l, range assignments),
// or through a pointer to one (*p = v). A pointer into a plan is a pointer
// of a plan type, so a write through it is caught where it is made. Reading
// a plan, building a value with a composite literal and calling plans'
// functions are allowed.
func TestOnlyPlansChangesAPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("loads and type-checks the module")
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
			packages.NeedTypes | packages.NeedTypesInfo,
		Dir: "..",
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the module has errors")
	}
	checked := 0
	for _, pkg := range pkgs {
		if pkg.PkgPath == plansPath {
			continue
		}
		for _, f := range pkg.Syntax {
			name := pkg.Fset.File(f.Pos()).Name()
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			checked++
			for _, pos := range planWrites(pkg.TypesInfo, f) {
				t.Errorf("%s: changes a plan outside package plans; add a function to plans and call it", pkg.Fset.Position(pos))
			}
		}
	}
	if checked == 0 {
		t.Fatal("no files checked")
	}
}

// planWrites returns the positions in f that change a value of an owned
// type.
func planWrites(info *types.Info, f *ast.File) []token.Pos {
	var out []token.Pos
	check := func(e ast.Expr) {
		if writesPlan(info, e) {
			out = append(out, e.Pos())
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				return true
			}
			for _, l := range n.Lhs {
				check(l)
			}
		case *ast.IncDecStmt:
			check(n.X)
		case *ast.RangeStmt:
			if n.Tok == token.ASSIGN {
				if n.Key != nil {
					check(n.Key)
				}
				if n.Value != nil {
					check(n.Value)
				}
			}
		}
		return true
	})
	return out
}

// writesPlan reports whether assigning to e changes a value of an owned
// type: somewhere along e's chain of selectors, indexes and dereferences is
// a field of one, or a dereference of a pointer to one.
func writesPlan(info *types.Info, e ast.Expr) bool {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.SelectorExpr:
			sel := info.Selections[x]
			if sel == nil {
				return false // a qualified identifier
			}
			if sel.Kind() == types.FieldVal && owned(sel.Recv()) {
				return true
			}
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			if owned(info.TypeOf(x)) {
				return true
			}
			e = x.X
		default:
			return false
		}
	}
}

// owned reports whether t, or what it points to, is an owned type.
func owned(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	return n.Obj().Pkg().Path() == plansPath && ownedTypes[n.Obj().Name()]
}
