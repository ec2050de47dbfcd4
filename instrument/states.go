// State transitions: the check-then-act of a state machine (docs/algorithm.md,
// "Check-then-act pairs", state transitions). A method that takes a lock,
// compares a field with a declared constant and assigns the same field —
// `if c.state == StateClosed { return }; c.state = StateClosed`,
// `needEvent := s.state != SubStateSubscribing; s.state =
// SubStateSubscribing` — is one goroutine's transition; when two goroutines
// run transitions of one object, the first to compare decides which path
// the other takes (the loser returns early, or skips an event). A passing
// run shows only one order. The compares are check sites (the field's
// address is the object, as for a flag) and the assignments record a
// dispose row of the same object, so that the check-then-act rules of the
// analysis pair them; the delay of such a pair, hoisted before the lock the
// transition holds, lets the other goroutine make its transition first.
//
// Sites:
//   - kind "check": the load of x.f in `x.f == K` or `x.f != K` (either
//     side), K a declared constant, in a top-level function that also
//     assigns x.f (the same text) outside function literals and calls Lock
//     or RLock of a sync.Mutex or RWMutex; x.f is a pure, addressable field
//     of integer or string type (type State string) of a shared object. The
//     load becomes _waflCheckField(id, &x.f), as a channel field's nil
//     check.
//   - kind "state": each assignment `x.f = v` of such a field in that
//     function: v becomes _waflState(id, &x.f, v), which records a dispose
//     row of &x.f before the store.

package instrument

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/dave/dst"
)

// hState is the helper of a state field's assignment (stateHelperTemplate).
const hState = "_waflState"

// actCheckState: the load of a state field in a compare with a constant,
// x.f -> _waflCheckField(id, &x.f); actStateSet: the value v assigned to a
// state field -> _waflState(id, &x.f, v) (numbered apart from rewrite.go's
// list, like actCheckField).
const (
	actCheckState actKind = 112
	actStateSet   actKind = 113
)

// stateHelperTemplate is appended to the generated helper file.
const stateHelperTemplate = `
func _waflState[T any](site uint32, slot *T, v T) T {
	if _waflOn() {
		_waflDisposeSlow(site, _wafl_unsafe.Pointer(slot))
	}
	return v
}
`

// stateFields returns the texts of the state fields of the top-level
// function body b: the integer and string fields it both compares with a
// declared constant and assigns, outside function literals, when it also
// takes a sync.Mutex or RWMutex (a transition another goroutine may run
// at the same time; without a lock two transitions would be a data race,
// which is -race's to find, and a parser's state is no such field).
func (c *collector) stateFields(b *ast.BlockStmt) map[string]bool {
	compared, assigned := map[string]bool{}, map[string]bool{}
	locks := false
	ast.Inspect(b, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			locks = locks || c.mutexLock(n)
		case *ast.BinaryExpr:
			if x := c.stateCompare(n); x != nil {
				compared[exprString(c.fset, x)] = true
			}
		case *ast.AssignStmt:
			if n.Tok != token.ASSIGN || len(n.Lhs) != len(n.Rhs) {
				return true
			}
			for _, l := range n.Lhs {
				if x, ok := ast.Unparen(l).(*ast.SelectorExpr); ok && c.stateField(x) {
					assigned[exprString(c.fset, x)] = true
				}
			}
		}
		return true
	})
	if !locks {
		return nil
	}
	var out map[string]bool
	for k := range compared {
		if assigned[k] {
			if out == nil {
				out = map[string]bool{}
			}
			out[k] = true
		}
	}
	return out
}

// mutexLock reports whether call is X.Lock() or X.RLock() on a
// sync.Mutex or sync.RWMutex (also one embedded in X).
func (c *collector) mutexLock(call *ast.CallExpr) bool {
	fsel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || (fsel.Sel.Name != "Lock" && fsel.Sel.Name != "RLock") || len(call.Args) != 0 {
		return false
	}
	sel := c.info.Selections[fsel]
	if sel == nil || sel.Kind() != types.MethodVal {
		return false
	}
	fn, ok := sel.Obj().(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == "sync"
}

// stateField reports whether x is a pure, addressable field of integer or
// string type of a shared object.
func (c *collector) stateField(x *ast.SelectorExpr) bool {
	sel := c.info.Selections[x]
	if sel == nil || sel.Kind() != types.FieldVal {
		return false
	}
	tv, ok := c.info.Types[x]
	if !ok || !tv.Addressable() {
		return false
	}
	if b, ok := under(tv.Type).(*types.Basic); !ok || b.Info()&(types.IsInteger|types.IsString) == 0 {
		return false
	}
	return c.pure(x) && c.sharedRoot(x)
}

// stateCompare returns the field x.f of `x.f == K` or `x.f != K` (either
// side) when K names a declared constant and x.f is a state field
// candidate (stateField); otherwise nil.
func (c *collector) stateCompare(b *ast.BinaryExpr) *ast.SelectorExpr {
	if b.Op != token.EQL && b.Op != token.NEQ {
		return nil
	}
	for _, pair := range [][2]ast.Expr{{b.X, b.Y}, {b.Y, b.X}} {
		if !c.namedConst(pair[1]) {
			continue
		}
		if x, ok := ast.Unparen(pair[0]).(*ast.SelectorExpr); ok && c.stateField(x) {
			return x
		}
	}
	return nil
}

// namedConst reports whether e names a declared constant (K or pkg.K), not
// a literal.
func (c *collector) namedConst(e ast.Expr) bool {
	var id *ast.Ident
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = e
	case *ast.SelectorExpr:
		id = e.Sel
	default:
		return false
	}
	_, ok := c.info.Uses[id].(*types.Const)
	return ok
}

// checkState records the check site of a compare of one of the walked
// function's state fields (c.states) outside function literals.
func (c *collector) checkState(n *ast.BinaryExpr) {
	if len(c.states) == 0 || len(c.funcs) != 1 {
		return
	}
	x := c.stateCompare(n)
	if x == nil || !c.states[exprString(c.fset, x)] || c.ed.has(x, actCheckState) {
		return
	}
	c.ed.add(x, action{kind: actCheckState, site: c.site("check", x, x)})
}

// stateSet records the assignments of the walked function's state fields
// in n (outside function literals): kind "state", the value wrapped.
func (c *collector) stateSet(n *ast.AssignStmt) {
	if len(c.states) == 0 || len(c.funcs) != 1 || n.Tok != token.ASSIGN || len(n.Lhs) != len(n.Rhs) {
		return
	}
	for i, l := range n.Lhs {
		x, ok := ast.Unparen(l).(*ast.SelectorExpr)
		if !ok || !c.states[exprString(c.fset, x)] || !c.stateField(x) {
			continue
		}
		c.ed.add(n.Rhs[i], action{kind: actStateSet, site: c.site("state", x, x), lhs: l})
	}
}

// stateHook wraps the value v assigned to the state field slot.
func stateHook(site uint32, v, slot dst.Expr) dst.Expr {
	return call(hState, siteLit(site), addr(slot), v)
}
