// Test boundaries: every top-level test function of a test file starts
// with _waflTest(t), which while recording marks the test's start and,
// from t.Cleanup, its end (hook.TestBegin, hook.TestEnd). With the marks a
// preparation run can run all tests of a package in one process, as go
// test does, and wafl splits the recorded events per test (record/split).

package instrument

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
)

// hTest is the helper a test function starts with (helperSource).
const hTest = "_waflTest"

// markTests makes _waflTest(t) the first statement of every top-level
// test of file, func TestXxx(t *testing.T), naming an unnamed or blank
// parameter. It reports whether it changed df.
func markTests(fset *token.FileSet, info *types.Info, dec *decorator.Decorator, file *ast.File, df *dst.File) bool {
	changed := false
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Body == nil || fd.Name.Name == "TestMain" || !IsTestName(fd.Name.Name) || fd.Type.TypeParams != nil {
			continue
		}
		ps := fd.Type.Params.List
		if len(ps) != 1 || len(ps[0].Names) > 1 || !isTestingT(info.TypeOf(ps[0].Type)) {
			continue
		}
		dfd, ok := dec.Dst.Nodes[fd].(*dst.FuncDecl)
		if !ok || dfd.Body == nil || len(dfd.Type.Params.List) != 1 {
			continue
		}
		field := dfd.Type.Params.List[0]
		name := subtestVar
		if len(field.Names) == 1 && field.Names[0].Name != "_" {
			name = field.Names[0].Name
		} else {
			field.Names = []*dst.Ident{dst.NewIdent(name)}
		}
		st := &dst.ExprStmt{X: call(hTest, dst.NewIdent(name))}
		st.Decs.Before, st.Decs.After = dst.NewLine, dst.NewLine
		st.Decs.Start.Append(marker(fset, fd.Body.Lbrace))
		dfd.Body.List = append([]dst.Stmt{st}, dfd.Body.List...)
		changed = true
	}
	return changed
}

// isTestingT reports whether t is *testing.T.
func isTestingT(t types.Type) bool {
	p, ok := types.Unalias(t).(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := types.Unalias(p.Elem()).(*types.Named)
	if !ok {
		return false
	}
	o := n.Obj()
	return o.Pkg() != nil && o.Pkg().Path() == "testing" && o.Name() == "T"
}
