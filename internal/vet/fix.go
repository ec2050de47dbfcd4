package vet

import (
	"bytes"
	"go/ast"
	"go/token"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ssa"
)

// inTestFile reports whether pos is in a _test.go file: tests start
// goroutines and close channels on purpose, and go vet analyzes them with
// the package.
func (c *checker) inTestFile(pos token.Pos) bool {
	return strings.HasSuffix(c.pass.Fset.Position(pos).Filename, "_test.go")
}

// swapFix returns a fix that moves the statement of b before the statement
// of a when the two are adjacent statements of one block (a, then b):
// go s.loop(); s.h = h  becomes  s.h = h; go s.loop().
func (c *checker) swapFix(a, b ssa.Instruction, msg string) *analysis.SuggestedFix {
	pa, pb := c.posOf(a), c.posOf(b)
	if !pa.IsValid() || !pb.IsValid() {
		return nil
	}
	var fix *analysis.SuggestedFix
	for _, f := range c.pass.Files {
		if f.Pos() > pa || f.End() < pa {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if fix != nil || n == nil || n.Pos() > pa || n.End() < pb {
				return fix == nil && n != nil
			}
			var list []ast.Stmt
			switch n := n.(type) {
			case *ast.BlockStmt:
				list = n.List
			case *ast.CaseClause:
				list = n.Body
			case *ast.CommClause:
				list = n.Body
			default:
				return true
			}
			for i := 0; i+1 < len(list); i++ {
				sa, sb := list[i], list[i+1]
				if !within(sa, pa) || !within(sb, pb) || !simpleStmt(sa) || !simpleStmt(sb) {
					continue
				}
				if _, ok := sb.(*ast.AssignStmt); ok && sb.(*ast.AssignStmt).Tok == token.DEFINE {
					continue
				}
				fix = c.swap(sa, sb, msg)
				return false
			}
			return true
		})
	}
	return fix
}

func within(n ast.Node, pos token.Pos) bool { return n.Pos() <= pos && pos < n.End() }

func simpleStmt(s ast.Stmt) bool {
	switch s.(type) {
	case *ast.ExprStmt, *ast.AssignStmt, *ast.GoStmt:
		return true
	}
	return false
}

func (c *checker) swap(a, b ast.Stmt, msg string) *analysis.SuggestedFix {
	tf := c.pass.Fset.File(a.Pos())
	if tf == nil {
		return nil
	}
	src, err := c.pass.ReadFile(tf.Name())
	if err != nil {
		return nil
	}
	ta := src[tf.Offset(a.Pos()):tf.Offset(a.End())]
	endB := tf.Offset(b.End())
	// A comment after b on its line moves with it.
	rest := src[endB:]
	eol := bytes.IndexByte(rest, '\n')
	if eol < 0 {
		eol = len(rest)
	}
	if bytes.HasPrefix(bytes.TrimSpace(rest[:eol]), []byte("//")) {
		endB += eol
	}
	tb := src[tf.Offset(b.Pos()):endB]
	between := src[tf.Offset(a.End()):tf.Offset(b.Pos())]
	if bytes.Contains(between, []byte("//")) || bytes.Contains(between, []byte("/*")) {
		return nil
	}
	var out bytes.Buffer
	out.Write(tb)
	out.Write(between)
	out.Write(ta)
	return &analysis.SuggestedFix{
		Message:   msg,
		TextEdits: []analysis.TextEdit{{Pos: a.Pos(), End: tf.Pos(endB), NewText: out.Bytes()}},
	}
}
