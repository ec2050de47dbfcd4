// Escape analysis of locals: which local variables another goroutine can
// reach and see change (sharedLocals, once per package), and whether the
// storage of a slot expression is so reachable (sharedRoot). Accesses to
// slots no other goroutine can reach are not instrumented.

package instrument

import (
	"go/ast"
	"go/token"
	"go/types"
)

// sharedLocals returns the local variables of the files that another
// goroutine can reach and see change: those whose address is taken
// (explicitly, by slicing an array, or by calling a pointer method on
// them), and those captured by a function literal and assigned after their
// declaration, as a whole or a field or array element of them. Other locals cannot be shared, or hold one value for their
// whole life once any closure can see them, so accesses to their slots are
// not instrumented.
func sharedLocals(info *types.Info, files []*ast.File) map[*types.Var]bool {
	shared := map[*types.Var]bool{}
	captured := map[*types.Var]bool{}
	assigned := map[*types.Var]bool{}
	lhsVar := func(e ast.Expr, decl bool) {
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok {
			// q.f = v, q.arr[i] = v: the local struct (or array) q
			// changes.
			if v := rootLocal(info, ast.Unparen(e)); v != nil {
				assigned[v] = true
			}
			return
		}
		v, ok := info.Uses[id].(*types.Var)
		if !ok && !decl {
			v, ok = info.Defs[id].(*types.Var)
		}
		if ok && v.Pos() != id.Pos() {
			assigned[v] = true
		}
	}
	markRoot := func(e ast.Expr) {
		if v := rootLocal(info, e); v != nil {
			shared[v] = true
		}
	}
	for _, f := range files {
		var lits []*ast.FuncLit
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				return false
			}
			switch n := n.(type) {
			case *ast.FuncLit:
				lits = append(lits, n)
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					lhsVar(l, n.Tok == token.DEFINE)
				}
			case *ast.IncDecStmt:
				lhsVar(n.X, false)
			case *ast.RangeStmt:
				if n.Tok == token.ASSIGN {
					if n.Key != nil {
						lhsVar(n.Key, false)
					}
					if n.Value != nil {
						lhsVar(n.Value, false)
					}
				}
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					markRoot(n.X)
				}
			case *ast.SliceExpr:
				if _, ok := under(typeOf(info, n.X)).(*types.Array); ok {
					markRoot(n.X)
				}
			case *ast.SelectorExpr:
				if sel := info.Selections[n]; sel != nil && sel.Kind() != types.FieldVal {
					if fn, ok := sel.Obj().(*types.Func); ok {
						if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
							if _, isPtr := sig.Recv().Type().(*types.Pointer); isPtr {
								if _, xPtr := under(typeOf(info, n.X)).(*types.Pointer); !xPtr {
									markRoot(n.X)
								}
							}
						}
					}
				}
			}
			return true
		})
		for _, lit := range lits {
			ast.Inspect(lit.Body, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok {
					return true
				}
				v, ok := info.Uses[id].(*types.Var)
				if !ok || v.IsField() || isPackageLevel(v) {
					return true
				}
				if v.Pos() < lit.Pos() || v.Pos() >= lit.End() {
					captured[v] = true
				}
				return true
			})
		}
	}
	for v := range captured {
		if assigned[v] {
			shared[v] = true
		}
	}
	return shared
}

// rootLocal returns the local variable whose storage e lives in, if any:
// x, x.f (x a struct value), x[i] (x an array), (x).
func rootLocal(info *types.Info, e ast.Expr) *types.Var {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			v, ok := info.Uses[x].(*types.Var)
			if !ok {
				v, ok = info.Defs[x].(*types.Var)
			}
			if !ok || v.IsField() || isPackageLevel(v) {
				return nil
			}
			return v
		case *ast.SelectorExpr:
			sel := info.Selections[x]
			if sel == nil || sel.Kind() != types.FieldVal || sel.Indirect() {
				return nil
			}
			if _, ok := under(typeOf(info, x.X)).(*types.Pointer); ok {
				return nil
			}
			e = x.X
		case *ast.IndexExpr:
			if _, ok := under(typeOf(info, x.X)).(*types.Array); !ok {
				return nil
			}
			e = x.X
		default:
			return nil
		}
	}
}

func isPackageLevel(v *types.Var) bool {
	return v.Pkg() != nil && v.Parent() == v.Pkg().Scope()
}

// sharedRoot reports whether the storage of e can be reached by another
// goroutine: a package-level variable, a shared local, anything behind a
// pointer or in a slice, and fields and array elements of those.
func (c *collector) sharedRoot(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return c.sharedRoot(x.X)
	case *ast.Ident:
		v, ok := c.info.Uses[x].(*types.Var)
		if !ok || v.IsField() {
			return false
		}
		return isPackageLevel(v) || c.shared[v]
	case *ast.SelectorExpr:
		sel := c.info.Selections[x]
		if sel == nil { // qualified identifier: package-level variable
			_, ok := c.info.Uses[x.Sel].(*types.Var)
			return ok
		}
		if sel.Kind() != types.FieldVal {
			return false
		}
		if sel.Indirect() {
			return true
		}
		if _, ok := under(typeOf(c.info, x.X)).(*types.Pointer); ok {
			return true
		}
		return c.sharedRoot(x.X)
	case *ast.IndexExpr:
		switch under(typeOf(c.info, x.X)).(type) {
		case *types.Slice, *types.Pointer:
			return true
		case *types.Array:
			return c.sharedRoot(x.X)
		}
		return false
	case *ast.StarExpr:
		return true
	}
	return false
}
