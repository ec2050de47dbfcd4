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
	b, ok := under(c.sharedFieldType(x)).(*types.Basic)
	return ok && b.Info()&(types.IsInteger|types.IsString) != 0
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
// in n (outside function literals): kind "state", the value wrapped. The
// receive of a select case (`case c.state = <-ch:`) must stay a receive and
// is left alone.
func (c *collector) stateSet(n *ast.AssignStmt, parent ast.Node) {
	if len(c.states) == 0 || len(c.funcs) != 1 || n.Tok != token.ASSIGN || len(n.Lhs) != len(n.Rhs) {
		return
	}
	if cc, ok := parent.(*ast.CommClause); ok && cc.Comm == n {
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

// Atomic state transitions: the same check-then-act on a field of a
// sync/atomic integer or Bool type, or an integer field the package
// updates with the sync/atomic functions. A field is a state when the
// file compares-and-swaps it from one constant to another
// (`requestSent.CompareAndSwap(false, true)`,
// `atomic.CompareAndSwapInt32(&s.state, active, closing)`; a CAS loop
// that adds to a counter swaps computed values and is left alone). Then,
// in that file:
//   - each such CAS is a check before it (kind "check", the field's
//     address as the object: a delay there lets the other goroutine swap
//     first) and, when it swapped, a dispose row after it (kind "state");
//   - each Load of the field is a check after the load (kind "check");
//   - each Store of the field records a dispose row before it (kind
//     "state").
// The rewrite keeps the atomic call and wraps it:
//   - E.CompareAndSwap(o, n) -> _waflSwapped(s, &E, (*_waflCheckAt(c, &E)).CompareAndSwap(o, n)),
//     atomic.CompareAndSwapInt32(p, o, n) -> _waflSwapped(s, p, atomic.CompareAndSwapInt32(_waflCheckAt(c, p), o, n));
//   - E.Load() -> _waflLoaded(c, &E, E.Load()), atomic.LoadInt32(p) -> _waflLoaded(c, p, atomic.LoadInt32(p));
//   - E.Store(v) -> (*_waflStateAt(s, &E)).Store(v), atomic.StoreInt32(p, v) -> atomic.StoreInt32(_waflStateAt(s, p), v).
// (&E is E itself when E is a pointer to the atomic.)

// Helper names of atomic state transitions (stateHelperTemplate).
const (
	hCheckAt = "_waflCheckAt"
	hLoaded  = "_waflLoaded"
	hSwapped = "_waflSwapped"
	hStateAt = "_waflStateAt"
)

// actAtomicState: a Load, Store or CompareAndSwap of an atomic state field
// (action.op "load", "store" or "cas"; ptr: the method's receiver is a
// pointer; method: the sync/atomic function's name for the function form,
// "" for a method; site: the check site, or the state site of a store;
// site2: a CAS's state site).
const actAtomicState actKind = 114

// atomicStateHelperTemplate is appended to the generated helper file.
const atomicStateHelperTemplate = `
func _waflCheckAt[P any](site uint32, p *P) *P {
	if _waflOn() {
		_waflCheckSlow(site, _wafl_unsafe.Pointer(p))
	}
	return p
}

func _waflLoaded[P, T any](site uint32, p *P, v T) T {
	if _waflOn() {
		_waflCheckSlow(site, _wafl_unsafe.Pointer(p))
	}
	return v
}

func _waflSwapped[P any](site uint32, p *P, ok bool) bool {
	if ok && _waflOn() {
		_waflDisposeSlow(site, _wafl_unsafe.Pointer(p))
	}
	return ok
}

func _waflStateAt[P any](site uint32, p *P) *P {
	if _waflOn() {
		_waflDisposeSlow(site, _wafl_unsafe.Pointer(p))
	}
	return p
}
`

// atomicOp is one atomic operation on a field: the field, the operation
// ("load", "store", "cas"), the expression that yields its address (E of
// a method call on a pointer, the &x.f argument of a function) or the
// addressable atomic E, and whether ptrExpr already is the address.
type atomicOp struct {
	field  *types.Var
	op     string
	target ast.Expr // E (method form) or the address argument (function form)
	isPtr  bool     // target is a pointer (always for the function form)
	fn     string   // the sync/atomic function's name; "" for a method
}

// atomicStateKinds are the sync/atomic types whose fields can be states.
var atomicStateKinds = map[string]bool{"Int32": true, "Int64": true, "Uint32": true, "Uint64": true, "Bool": true}

// atomicOpOf returns the atomic operation call makes on a field, if any.
func (c *collector) atomicOpOf(call *ast.CallExpr) (atomicOp, bool) {
	fsel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return atomicOp{}, false
	}
	if sel := c.info.Selections[fsel]; sel != nil {
		// The method form: E.Load(), E.Store(v), E.CompareAndSwap(o, n).
		if sel.Kind() != types.MethodVal {
			return atomicOp{}, false
		}
		op, nargs := atomicMethodOp(fsel.Sel.Name)
		if op == "" || len(call.Args) != nargs {
			return atomicOp{}, false
		}
		t := typeOf(c.info, fsel.X)
		isPtr := false
		if p, ok := t.(*types.Pointer); ok {
			t, isPtr = p.Elem(), true
		}
		named, ok := types.Unalias(t).(*types.Named)
		if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != "sync/atomic" || !atomicStateKinds[named.Obj().Name()] {
			return atomicOp{}, false
		}
		x, ok := ast.Unparen(fsel.X).(*ast.SelectorExpr)
		if !ok || !c.pure(x) {
			return atomicOp{}, false
		}
		fs := c.info.Selections[x]
		if fs == nil || fs.Kind() != types.FieldVal || (!isPtr && !c.info.Types[x].Addressable()) {
			return atomicOp{}, false
		}
		return atomicOp{field: fs.Obj().(*types.Var), op: op, target: fsel.X, isPtr: isPtr}, true
	}
	// The function form: atomic.LoadInt32(&x.f), StoreInt32(&x.f, v),
	// CompareAndSwapInt32(&x.f, o, n) (Int64, Uint32, Uint64 alike).
	fn, ok := c.info.Uses[fsel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "sync/atomic" || len(call.Args) == 0 {
		return atomicOp{}, false
	}
	var op string
	var nargs int
	for _, kind := range []string{"Int32", "Int64", "Uint32", "Uint64"} {
		switch fn.Name() {
		case "Load" + kind:
			op, nargs = "load", 1
		case "Store" + kind:
			op, nargs = "store", 2
		case "CompareAndSwap" + kind:
			op, nargs = "cas", 3
		}
	}
	if op == "" || len(call.Args) != nargs {
		return atomicOp{}, false
	}
	u, ok := ast.Unparen(call.Args[0]).(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return atomicOp{}, false
	}
	x, ok := ast.Unparen(u.X).(*ast.SelectorExpr)
	if !ok || !c.pure(x) {
		return atomicOp{}, false
	}
	fs := c.info.Selections[x]
	if fs == nil || fs.Kind() != types.FieldVal {
		return atomicOp{}, false
	}
	return atomicOp{field: fs.Obj().(*types.Var), op: op, target: call.Args[0], isPtr: true, fn: fn.Name()}, true
}

// atomicMethodOp maps a method name to its operation and argument count.
func atomicMethodOp(name string) (string, int) {
	switch name {
	case "Load":
		return "load", 0
	case "Store":
		return "store", 1
	case "CompareAndSwap":
		return "cas", 2
	}
	return "", 0
}

// atomicStates returns the fields file compares-and-swaps from one
// constant to another: the atomic state fields.
func (c *collector) atomicStates(file *ast.File) map[*types.Var]bool {
	out := map[*types.Var]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if a, ok := c.atomicOpOf(call); ok && a.op == "cas" {
			args := call.Args[len(call.Args)-2:]
			if c.info.Types[args[0]].Value != nil && c.info.Types[args[1]].Value != nil {
				out[a.field] = true
			}
		}
		return true
	})
	return out
}

// atomicState records the sites of an atomic operation on an atomic state
// field (not as the call of a go or defer statement: its receiver and
// arguments are evaluated before the call runs).
func (c *collector) atomicState(call *ast.CallExpr, parent ast.Node) {
	switch p := parent.(type) {
	case *ast.GoStmt:
		if p.Call == call {
			return
		}
	case *ast.DeferStmt:
		if p.Call == call {
			return
		}
	}
	if c.atomicFields == nil {
		c.atomicFields = c.atomicStates(c.file)
	}
	a, ok := c.atomicOpOf(call)
	if !ok || !c.atomicFields[a.field] || c.ed.has(call, actCheckAtomicBool) || c.ed.has(call, actAtomicState) {
		return
	}
	act := action{kind: actAtomicState, op: a.op, ptr: a.isPtr, method: a.fn, lhs: a.target}
	switch a.op {
	case "load":
		act.site = c.site("check", call, a.target)
	case "store":
		act.site = c.site("state", call, a.target)
	case "cas":
		act.site = c.site("check", call, a.target)
		act.site2 = c.site("state", call, a.target)
	}
	c.ed.add(call, act)
}

// preAtomicStates takes a pristine copy of the target (the atomic E, or
// the address argument) of an atomic state operation that names it twice.
func (ap *applier) preAtomicStates(n dst.Node) {
	ce, ok := n.(*dst.CallExpr)
	if !ok {
		return
	}
	a, ok := ap.nodes[n].(*ast.CallExpr)
	if !ok {
		return
	}
	for _, act := range ap.ed.acts[a] {
		if act.kind != actAtomicState || act.op == "store" {
			continue
		}
		if act.method == "" {
			ap.clones[act.lhs] = cleanClone(unparen(ce.Fun).(*dst.SelectorExpr).X)
		} else {
			ap.clones[act.lhs] = cleanClone(ce.Args[0])
		}
	}
}

// editAtomicState rewrites an atomic state operation (atomicState).
func (ap *applier) editAtomicState(act action, ce *dst.CallExpr) dst.Expr {
	// ptrOf returns the address of the atomic: E itself when it is a
	// pointer (or the function form's address argument), else &E.
	ptrOf := func(e dst.Expr) dst.Expr {
		if act.ptr {
			return e
		}
		return addr(e)
	}
	var target dst.Expr
	if act.method == "" {
		target = unparen(ce.Fun).(*dst.SelectorExpr).X
	} else {
		target = ce.Args[0]
	}
	pristine := ap.clones[act.lhs]
	wrapTarget := func(helper string, site uint32) {
		w := call(helper, siteLit(site), ptrOf(target))
		if act.method == "" {
			unparen(ce.Fun).(*dst.SelectorExpr).X = paren(&dst.StarExpr{X: w})
		} else {
			ce.Args[0] = w
		}
	}
	decs := ce.Decs
	ce.Decs = dst.CallExprDecorations{}
	var out *dst.CallExpr
	switch act.op {
	case "load":
		out = call(hLoaded, siteLit(act.site), ptrOf(pristine), ce)
	case "store":
		wrapTarget(hStateAt, act.site)
		out = ce
	case "cas":
		wrapTarget(hCheckAt, act.site)
		out = call(hSwapped, siteLit(act.site2), ptrOf(pristine), ce)
	}
	out.Decs = decs
	return out
}
