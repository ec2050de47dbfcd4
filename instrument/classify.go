// Type questions collection asks about the original syntax: is this
// expression a slot of reference type, may it be evaluated twice, what does
// a store into it do (init, dispose, or decided by the value at run time),
// is it an atomic, can a go statement's argument be copied into a
// temporary.

package instrument

import (
	"go/ast"
	"go/token"
	"go/types"
)

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
func (c *collector) slot(e ast.Expr) bool {
	tv, ok := c.info.Types[e]
	if !ok || !tv.IsValue() || !tv.Addressable() || refKind(tv.Type) == "" {
		return false
	}
	return c.sharedRoot(e)
}

// pure reports whether evaluating e twice is indistinguishable from
// evaluating it once: no calls, receives or conversions, only names,
// field selections, dereferences, indexing and literals.
func (c *collector) pure(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident, *ast.BasicLit:
		return true
	case *ast.ParenExpr:
		return c.pure(x.X)
	case *ast.SelectorExpr:
		if sel := c.info.Selections[x]; sel != nil && sel.Kind() != types.FieldVal {
			return false
		}
		return c.pure(x.X)
	case *ast.StarExpr:
		return c.pure(x.X)
	case *ast.IndexExpr:
		if _, ok := under(typeOf(c.info, x.X)).(*types.Map); ok {
			return false
		}
		return c.pure(x.X) && c.pure(x.Index)
	}
	return false
}

// staticOp classifies the store of rhs into a slot of type slotType:
// "dispose" for nil, "init" for values that are non-nil by construction,
// "store" (nil-ness known only at run time) otherwise.
func (c *collector) staticOp(rhs ast.Expr, slotType types.Type) string {
	tv := c.info.Types[rhs]
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
			if b, ok := c.info.Uses[id].(*types.Builtin); ok && (b.Name() == "make" || b.Name() == "new") {
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

// isChanType reports whether t is a channel type (not a type parameter).
func isChanType(t types.Type) bool {
	if t == nil {
		return false
	}
	if _, ok := types.Unalias(t).(*types.TypeParam); ok {
		return false
	}
	_, ok := t.Underlying().(*types.Chan)
	return ok
}

// isFuncObj reports whether e names a declared function (possibly
// instantiated), whose evaluation has no effect.
func (c *collector) isFuncObj(e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		_, ok := c.info.Uses[x].(*types.Func)
		return ok
	case *ast.SelectorExpr:
		if c.info.Selections[x] != nil {
			return false
		}
		_, ok := c.info.Uses[x.Sel].(*types.Func)
		return ok
	case *ast.IndexExpr:
		return c.isFuncObj(x.X)
	case *ast.IndexListExpr:
		return c.isFuncObj(x.X)
	}
	return false
}

// tempable reports whether `t := e` gives t the type e has in its context,
// so that e can be evaluated early into a temporary.
func (c *collector) tempable(e ast.Expr) bool {
	if c.implicitInstance(e) {
		return false
	}
	tv, ok := c.info.Types[e]
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
			return c.tempable(x.X) || types.Identical(tv.Type, types.Typ[types.Int])
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
func (c *collector) implicitInstance(e ast.Expr) bool {
	var id *ast.Ident
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	default:
		return false
	}
	_, ok := c.info.Instances[id]
	return ok
}
