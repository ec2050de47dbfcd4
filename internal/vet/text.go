package vet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// text renders an SSA value as the source expression it came from, for
// messages: s.l, cc.balancer.sc, p.
func (c *checker) text(v ssa.Value) string {
	return c.textDepth(v, 0)
}

func (c *checker) textDepth(v ssa.Value, depth int) string {
	if depth > 6 {
		return "…"
	}
	switch v := v.(type) {
	case *ssa.FieldAddr:
		if f := fieldOf(v); f != nil {
			return c.textDepth(v.X, depth+1) + "." + f.Name()
		}
	case *ssa.Field:
		if st, ok := v.X.Type().Underlying().(*types.Struct); ok && v.Field < st.NumFields() {
			return c.textDepth(v.X, depth+1) + "." + st.Field(v.Field).Name()
		}
	case *ssa.UnOp:
		if v.Op == token.MUL {
			return c.textDepth(v.X, depth+1)
		}
	case *ssa.Parameter, *ssa.FreeVar, *ssa.Global:
		return v.Name()
	case *ssa.Alloc:
		if v.Comment == "complit" {
			if name := c.assignedName(v.Pos()); name != "" {
				return name
			}
		}
		if v.Comment != "" {
			return v.Comment
		}
	case *ssa.MakeChan:
		if name := c.assignedName(v.Pos()); name != "" {
			return name
		}
		return "the channel made at " + c.posString(v.Pos())
	case *ssa.ChangeType:
		return c.textDepth(v.X, depth+1)
	case *ssa.Extract:
		if name := c.assignedNameAt(v.Tuple.Pos(), v.Index); name != "" {
			return name
		}
	case *ssa.Call:
		if k, op := c.atomicCall(v.Common()); k.valid() && op == "Load" {
			return c.textDepth(v.Common().Args[0], depth+1)
		}
	}
	return "the value"
}

// assignedName returns the variable a value made at pos is assigned to
// (ch := make(chan T)), if any.
func (c *checker) assignedName(pos token.Pos) string { return c.assignedNameAt(pos, -1) }

// assignedNameAt is assignedName for the index-th variable a tuple is
// assigned to (v, ok := m[k]), or the only one when index < 0.
func (c *checker) assignedNameAt(pos token.Pos, index int) string {
	if !pos.IsValid() {
		return ""
	}
	var name string
	for _, f := range c.pass.Files {
		if f.Pos() > pos || f.End() < pos {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if name != "" || n == nil || n.Pos() > pos || n.End() < pos {
				return false
			}
			if as, ok := n.(*ast.AssignStmt); ok {
				for i, r := range as.Rhs {
					if r.Pos() > pos || pos >= r.End() {
						continue
					}
					j := i
					if index >= 0 && len(as.Rhs) == 1 {
						j = index
					}
					if j < len(as.Lhs) && (len(as.Lhs) == len(as.Rhs) || index >= 0) {
						if id, ok := as.Lhs[j].(*ast.Ident); ok {
							name = id.Name
						}
					}
				}
			}
			return true
		})
	}
	return name
}

// posOf returns where an instruction is in the source, at the start of
// its expression.
func (c *checker) posOf(in ssa.Instruction) token.Pos {
	var pos token.Pos
	switch in := in.(type) {
	case *ssa.Store:
		if fa, ok := in.Addr.(*ssa.FieldAddr); ok && fa.Pos().IsValid() {
			pos = fa.Pos()
		} else {
			pos = in.Pos()
		}
	case *ssa.UnOp:
		pos = in.Pos()
		if !pos.IsValid() {
			if fa, ok := in.X.(*ssa.FieldAddr); ok {
				pos = fa.Pos()
			}
		}
	default:
		pos = in.Pos()
	}
	if !pos.IsValid() {
		if fn := in.Parent(); fn != nil {
			pos = fn.Pos()
		}
	}
	return c.exprStart(pos)
}

// exprStart maps the position SSA keeps (a call's parenthesis, a
// selector's name) to the start of the expression.
func (c *checker) exprStart(pos token.Pos) token.Pos {
	if c.starts == nil {
		c.starts = map[token.Pos]token.Pos{}
		for _, f := range c.pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if _, ok := c.starts[n.Lparen]; !ok {
						c.starts[n.Lparen] = n.Pos()
					}
				case *ast.SelectorExpr:
					if _, ok := c.starts[n.Sel.Pos()]; !ok {
						c.starts[n.Sel.Pos()] = n.Pos()
					}
				case *ast.SendStmt:
					c.starts[n.Arrow] = n.Pos()
				case *ast.GoStmt:
					c.starts[n.Call.Lparen] = n.Pos()
				case *ast.DeferStmt:
					c.starts[n.Call.Lparen] = n.Pos()
				case *ast.UnaryExpr:
					c.starts[n.OpPos] = n.Pos()
				}
				return true
			})
		}
	}
	if p, ok := c.starts[pos]; ok {
		return p
	}
	return pos
}
