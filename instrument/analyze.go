package instrument

import (
	"go/ast"
	"go/token"
	"go/types"
)

// This file holds the type-based questions the rewriter asks about the
// original syntax: is this expression a shareable slot of reference type,
// may it be evaluated twice, which locals can be seen by other goroutines.

// sharedLocals returns the local variables of the files that another
// goroutine can reach and see change: those whose address is taken
// (explicitly, by slicing an array, or by calling a pointer method on
// them), and those captured by a function literal and assigned after their
// declaration. Other locals cannot be shared, or hold one value for their
// whole life once any closure can see them, so accesses to their slots are
// not instrumented.
func sharedLocals(info *types.Info, files []*ast.File) map[*types.Var]bool {
	shared := map[*types.Var]bool{}
	captured := map[*types.Var]bool{}
	assigned := map[*types.Var]bool{}
	lhsVar := func(e ast.Expr, decl bool) {
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok {
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

func typeOf(info *types.Info, e ast.Expr) types.Type {
	if tv, ok := info.Types[e]; ok {
		return tv.Type
	}
	return nil
}

func under(t types.Type) types.Type {
	if t == nil {
		return nil
	}
	return types.Unalias(t).Underlying()
}

// refKind classifies t as a reference type that can hold nil and whose
// nil-ness a MEMORDER bug is about. Type parameters are not reference types
// here even when their core type is.
func refKind(t types.Type) string {
	if t == nil {
		return ""
	}
	if _, ok := types.Unalias(t).(*types.TypeParam); ok {
		return ""
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return "pointer"
	case *types.Map:
		return "map"
	case *types.Chan:
		return "chan"
	case *types.Signature:
		return "func"
	case *types.Interface:
		if u.IsMethodSet() || u.Empty() {
			return "interface"
		}
	}
	return ""
}

// slot reports whether e denotes an addressable, possibly shared memory
// location of reference type: a field, package-level variable, slice or
// array element, pointer target, or a shared local.
func (r *fileRewriter) slot(e ast.Expr) bool {
	tv, ok := r.info.Types[e]
	if !ok || !tv.IsValue() || !tv.Addressable() || refKind(tv.Type) == "" {
		return false
	}
	return r.sharedRoot(e)
}

func (r *fileRewriter) sharedRoot(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return r.sharedRoot(x.X)
	case *ast.Ident:
		v, ok := r.info.Uses[x].(*types.Var)
		if !ok || v.IsField() {
			return false
		}
		return isPackageLevel(v) || r.shared[v]
	case *ast.SelectorExpr:
		sel := r.info.Selections[x]
		if sel == nil { // qualified identifier: package-level variable
			_, ok := r.info.Uses[x.Sel].(*types.Var)
			return ok
		}
		if sel.Kind() != types.FieldVal {
			return false
		}
		if sel.Indirect() {
			return true
		}
		if _, ok := under(typeOf(r.info, x.X)).(*types.Pointer); ok {
			return true
		}
		return r.sharedRoot(x.X)
	case *ast.IndexExpr:
		switch under(typeOf(r.info, x.X)).(type) {
		case *types.Slice, *types.Pointer:
			return true
		case *types.Array:
			return r.sharedRoot(x.X)
		}
		return false
	case *ast.StarExpr:
		return true
	}
	return false
}

// pure reports whether evaluating e twice is indistinguishable from
// evaluating it once: no calls, receives or conversions, only names,
// field selections, dereferences, indexing and literals.
func (r *fileRewriter) pure(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident, *ast.BasicLit:
		return true
	case *ast.ParenExpr:
		return r.pure(x.X)
	case *ast.SelectorExpr:
		if sel := r.info.Selections[x]; sel != nil && sel.Kind() != types.FieldVal {
			return false
		}
		return r.pure(x.X)
	case *ast.StarExpr:
		return r.pure(x.X)
	case *ast.IndexExpr:
		if _, ok := under(typeOf(r.info, x.X)).(*types.Map); ok {
			return false
		}
		return r.pure(x.X) && r.pure(x.Index)
	}
	return false
}

// staticOp classifies the store of rhs into a slot of type slotType:
// "dispose" for nil, "init" for values that are non-nil by construction,
// "store" (nil-ness known only at run time) otherwise.
func (r *fileRewriter) staticOp(rhs ast.Expr, slotType types.Type) string {
	tv := r.info.Types[rhs]
	if tv.IsNil() {
		return "dispose"
	}
	switch x := ast.Unparen(rhs).(type) {
	case *ast.UnaryExpr:
		if x.Op == token.AND {
			return "init"
		}
	case *ast.CompositeLit, *ast.FuncLit:
		return "init"
	case *ast.CallExpr:
		if id, ok := ast.Unparen(x.Fun).(*ast.Ident); ok {
			if b, ok := r.info.Uses[id].(*types.Builtin); ok && (b.Name() == "make" || b.Name() == "new") {
				return "init"
			}
		}
	}
	if tv.Type == nil {
		return "store"
	}
	return storeOpFor(tv.Type, slotType)
}

// storeOpFor is the op of storing a value of type vt, not statically nil
// or new, into a slot of type slotType: "init" for a concrete value into an
// interface slot (never nil, even a nil pointer), "store-any" for a value
// of type-parameter type into an interface slot (nil only if the type
// argument is an interface holding nil: the helper tests any(v) == nil,
// not the value's first word), otherwise "store" (the value's first word
// tells: pointer, map, chan, func, or an interface's type word).
func storeOpFor(vt, slotType types.Type) string {
	if refKind(slotType) != "interface" {
		return "store"
	}
	if _, isTP := types.Unalias(vt).(*types.TypeParam); isTP {
		return "store-any"
	}
	if _, isIface := under(vt).(*types.Interface); !isIface {
		return "init"
	}
	return "store"
}

// siteKind is the site table kind of a store op.
func siteKind(op string) string {
	if op == "store-any" {
		return "store"
	}
	return op
}

// atomicKind reports whether t (or *t) is sync/atomic.Pointer[T] ("pointer")
// or sync/atomic.Value ("value"), and whether t is the pointer.
func atomicKind(t types.Type) (kind string, isPtr bool) {
	if t == nil {
		return "", false
	}
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t, isPtr = types.Unalias(p.Elem()), true
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != "sync/atomic" {
		return "", false
	}
	switch n.Obj().Name() {
	case "Pointer":
		return "pointer", isPtr
	case "Value":
		return "value", isPtr
	}
	return "", false
}

// isFuncObj reports whether e names a declared function (possibly
// instantiated), whose evaluation has no effect.
func (r *fileRewriter) isFuncObj(e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		_, ok := r.info.Uses[x].(*types.Func)
		return ok
	case *ast.SelectorExpr:
		if r.info.Selections[x] != nil {
			return false
		}
		_, ok := r.info.Uses[x.Sel].(*types.Func)
		return ok
	case *ast.IndexExpr:
		return r.isFuncObj(x.X)
	case *ast.IndexListExpr:
		return r.isFuncObj(x.X)
	}
	return false
}

// tempable reports whether `t := e` gives t the type e has in its context,
// so that e can be evaluated early into a temporary.
func (r *fileRewriter) tempable(e ast.Expr) bool {
	if r.implicitInstance(e) {
		return false
	}
	tv, ok := r.info.Types[e]
	if !ok || tv.Type == nil {
		return false
	}
	if b, ok := tv.Type.(*types.Basic); ok && b.Info()&types.IsUntyped != 0 {
		return false
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.BinaryExpr:
		switch x.Op {
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ, token.LAND, token.LOR:
			return types.Identical(tv.Type, types.Typ[types.Bool])
		case token.SHL, token.SHR:
			return r.tempable(x.X) || types.Identical(tv.Type, types.Typ[types.Int])
		}
	case *ast.UnaryExpr:
		if x.Op == token.NOT {
			return types.Identical(tv.Type, types.Typ[types.Bool])
		}
	}
	return true
}

// implicitInstance reports whether e names a generic function whose type
// arguments are inferred from the context (s.fn = genericFunc): such a
// value cannot be passed through a helper or a temporary.
func (r *fileRewriter) implicitInstance(e ast.Expr) bool {
	var id *ast.Ident
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	default:
		return false
	}
	_, ok := r.info.Instances[id]
	return ok
}
