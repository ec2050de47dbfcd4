package instrument

import (
	"go/ast"
	"go/types"
)

// Uses that dereference (docs/instrumentation.md, "Recovered panics"): a
// use site whose slot, when nil, makes the access panic — x.f.g, *x.f,
// x.f[i] on a pointer to an array, x.f.M() on an interface or through a
// value receiver, x.fn(), x.m[k] = v — calls _waflDeref (_waflMapUse for
// a map write) instead of _waflUse. In a detection run the runtime then
// looks at the slot after the site's event and its delay, and a nil there
// is logged as the panic about to happen (inject.AtDeref), so a panic the
// user's code recovers is still seen. Loads into locals, pointer-receiver
// method calls (legal on nil) and channels (close has its own check) keep
// _waflUse.

// Helper names of the dereferencing uses.
const (
	hDeref  = "_waflDeref"
	hMapUse = "_waflMapUse"
)

// Values of action.op for actUse.
const (
	opDeref    = "deref"
	opMapWrite = "map"
)

// derefHelperTemplate is appended to the generated helper file. The kind
// argument of _waflDerefSlow is abi.UseDeref (1) or abi.UseMapWrite (2).
const derefHelperTemplate = `
func _waflDeref[T any](site uint32, slot *T) *T {
	if _waflOn() {
		_waflDerefSlow(site, _wafl_unsafe.Pointer(slot), 1)
	}
	return slot
}

func _waflMapUse[T any](site uint32, slot *T) *T {
	if _waflOn() {
		_waflDerefSlow(site, _wafl_unsafe.Pointer(slot), 2)
	}
	return slot
}

//go:noinline
func _waflDerefSlow(site uint32, slot _wafl_unsafe.Pointer, kind uint8) { _wafl.Deref(site, slot, kind) }
`

// nilOp is the op of a use of a slot of type t: opDeref or opMapWrite when
// a nil value makes the use panic, "" otherwise (a channel: close has its
// own check).
func nilOp(t types.Type) string {
	switch refKind(t) {
	case "pointer", "interface", "func":
		return opDeref
	case "map":
		return opMapWrite // maps are use sites only when written (mapWrite)
	}
	return ""
}

// useHelper is the helper of a use with the given op.
func useHelper(op string) string {
	switch op {
	case opDeref:
		return hDeref
	case opMapWrite:
		return hMapUse
	}
	return hUse
}

// nilSafeMethod takes back the nil-deref claim of the use of n.X when n is
// a method with a pointer receiver declared on n.X's pointer type itself:
// calling it on nil is legal.
func (c *collector) nilSafeMethod(n *ast.SelectorExpr) {
	sel := c.info.Selections[n]
	if sel == nil || sel.Kind() != types.MethodVal || len(sel.Index()) != 1 {
		return
	}
	fn, ok := sel.Obj().(*types.Func)
	if !ok {
		return
	}
	recv := fn.Type().(*types.Signature).Recv()
	if recv == nil {
		return
	}
	if _, isPtr := recv.Type().(*types.Pointer); !isPtr {
		return
	}
	acts := c.ed.acts[n.X]
	for i := range acts {
		if acts[i].kind == actUse {
			acts[i].op = ""
		}
	}
}
