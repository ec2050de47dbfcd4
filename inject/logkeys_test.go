package inject

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogKeysAreABIConstants: the run log writer's keys are abi's Key*
// constants, never string literals, so that the runtime and
// internal/report (TestLogTypesMatchRunLog) read one table.
func TestLogKeysAreABIConstants(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) == 0 {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch sel.Sel.Name {
			case "int", "uint", "float", "bool", "str":
			default:
				return true
			}
			calls++
			if !abiKey(c.Args[0]) {
				t.Errorf("%s: run log key %s is not an abi.Key* constant", fset.Position(c.Args[0].Pos()), exprString(c.Args[0]))
			}
			return true
		})
	}
	if calls < 20 {
		t.Errorf("found %d run log writes; has the writer changed?", calls)
	}
}

// abiKey reports whether e is abi.Key….
func abiKey(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "abi" && strings.HasPrefix(sel.Sel.Name, "Key")
}

func exprString(e ast.Expr) string {
	if l, ok := e.(*ast.BasicLit); ok {
		return l.Value
	}
	return "expression"
}
