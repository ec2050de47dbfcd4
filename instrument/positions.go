// Positions: keeps every original statement of a rewritten file on the
// user's line, so that panics and compiler errors name the user's file and
// line. Before printing, markPositions puts a marker before each original
// statement and declaration (apply puts them on the statements it adds);
// after printing, fixPositions turns the markers of statements that moved
// into /*line file:line:col*/ directives and drops the others. Files that
// carry //line directives of their own (generated code) keep those and get
// none of ours: their markers are only dropped.

package instrument

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
)

// posMarker matches the marker of a statement's original line and column.
var posMarker = regexp.MustCompile(`/\*WAFLPOS:(\d+):(\d+)\*/ ?`)

// marker returns the position marker for p.
func marker(fset *token.FileSet, p token.Pos) string {
	pos := fset.Position(p)
	return fmt.Sprintf("/*WAFLPOS:%d:%d*/", pos.Line, pos.Column)
}

// hasLineDirectives reports whether f carries //line or /*line*/
// directives of its own.
func hasLineDirectives(f *ast.File) bool {
	for _, g := range f.Comments {
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//line ") || strings.HasPrefix(c.Text, "/*line ") {
				return true
			}
		}
	}
	return false
}

// markPositions puts a marker before every original statement and
// declaration of df (but the first declaration) that dec decorated.
func markPositions(dec *decorator.Decorator, df *dst.File, fset *token.FileSet) {
	// Declarations: after the keyword (a comment before it would be
	// printed on a line of its own).
	for i, d := range df.Decls {
		if i == 0 {
			continue
		}
		switch d := d.(type) {
		case *dst.FuncDecl:
			a, ok := dec.Ast.Nodes[d].(*ast.FuncDecl)
			if !ok {
				continue
			}
			next := a.Name.Pos()
			if a.Recv != nil {
				next = a.Recv.Pos()
			}
			d.Decs.Func.Append(marker(fset, next))
		case *dst.GenDecl:
			a, ok := dec.Ast.Nodes[d].(*ast.GenDecl)
			if !ok || len(a.Specs) == 0 {
				continue
			}
			next := a.Specs[0].Pos()
			if a.Lparen.IsValid() {
				next = a.Lparen
			}
			d.Decs.Tok.Append(marker(fset, next))
		}
	}
	dst.Inspect(df, func(n dst.Node) bool {
		var list []dst.Stmt
		switch n := n.(type) {
		case *dst.BlockStmt:
			list = n.List
		case *dst.CaseClause:
			list = n.Body
		case *dst.CommClause:
			list = n.Body
		}
		for _, s := range list {
			if a := dec.Ast.Nodes[s]; a != nil {
				s.Decorations().Start.Append(marker(fset, a.Pos()))
			}
		}
		return true
	})
}

// dropMarkers removes the markers from printed source.
func dropMarkers(src []byte) []byte {
	return posMarker.ReplaceAll(src, nil)
}

// fixPositions keeps every original statement on its original line: where
// the line the compiler would compute differs from the original one, the
// marker becomes a /*line file:line:col*/ directive; other markers go away.
// A marker the printer left at the end of a line (or alone on one) belongs
// to the statement on the next line and moves there; lines left empty by
// removed markers are dropped.
func fixPositions(src []byte, filename string) []byte {
	var out bytes.Buffer
	m := lineMap{filename: filename, baseOut: 1, baseMapped: 1}
	var pending []byte // a marker moved from the previous line
	for _, line := range bytes.SplitAfter(src, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if pending != nil {
			indent := len(line) - len(bytes.TrimLeft(line, " \t"))
			line = append(append(append([]byte{}, line[:indent]...), pending...), line[indent:]...)
		}
		var hadMarker bool
		line, pending, hadMarker = m.resolve(line)
		if hadMarker && len(bytes.TrimSpace(line)) == 0 {
			continue // the line held only markers
		}
		m.outLine++
		// Only what a removed marker left is trimmed: a line of a raw string
		// literal keeps its trailing blanks (miekg/dns's update_test.go
		// expects "ANY\t" at line ends; trimming every line changed the
		// string and failed the test without delays).
		line = bytes.TrimRight(line, "\n")
		if hadMarker {
			line = bytes.TrimRight(line, " \t")
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// lineMap follows the line the compiler gives each output line: the
// output line baseOut has the line baseMapped (the last directive's), and
// the lines after it count on from there.
type lineMap struct {
	filename            string
	outLine             int // output lines written so far
	baseOut, baseMapped int
}

// resolve replaces the markers in one printed line: a marker whose
// statement the compiler would put on another line than the original
// becomes a /*line*/ directive (and the new base), the others go away. A
// marker with nothing after it on the line is cut out and returned as
// pending, for the next line.
func (m *lineMap) resolve(line []byte) (out, pending []byte, hadMarker bool) {
	rest := line
	for {
		loc := posMarker.FindSubmatchIndex(rest)
		if loc == nil {
			break
		}
		hadMarker = true
		if len(bytes.TrimSpace(rest[loc[1]:])) == 0 {
			pending = append([]byte{}, rest[loc[0]:loc[1]]...)
			rest = append(append([]byte{}, rest[:loc[0]]...), bytes.TrimLeft(rest[loc[1]:], " \t")...)
			break
		}
		out = append(out, rest[:loc[0]]...)
		l, _ := strconv.Atoi(string(rest[loc[2]:loc[3]]))
		col, _ := strconv.Atoi(string(rest[loc[4]:loc[5]]))
		if m.baseMapped+(m.outLine+1)-m.baseOut != l {
			out = append(out, fmt.Sprintf("/*line %s:%d:%d*/", m.filename, l, col)...)
			m.baseOut, m.baseMapped = m.outLine+1, l
		}
		rest = rest[loc[1]:]
	}
	return append(out, rest...), pending, hadMarker
}
