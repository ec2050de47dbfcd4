package vet

import (
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// A key names a slot or a synchronization object the way the analyzer
// compares them across functions: a struct field (every object's field is
// the same key, as in a field-based points-to analysis), a package variable,
// or a local of one function (a captured variable, a channel or WaitGroup
// made there).
type key struct {
	field  *types.Var
	global *ssa.Global
	local  ssa.Value
}

func (k key) valid() bool { return k.field != nil || k.global != nil || k.local != nil }

// maxOrigin bounds the walk from a value back to where it came from.
const maxOrigin = 6

// origins returns the values v may come from, looking through conversions,
// phis, captured variables and the parameters of functions whose callers
// are all known. It returns nil when it gives up.
func (c *checker) origins(v ssa.Value) []ssa.Value {
	var out []ssa.Value
	seen := map[ssa.Value]bool{}
	var walk func(v ssa.Value, depth int) bool
	walk = func(v ssa.Value, depth int) bool {
		if seen[v] {
			return true
		}
		seen[v] = true
		if depth > maxOrigin || len(out) > 16 {
			return false
		}
		switch v := v.(type) {
		case *ssa.ChangeType:
			return walk(v.X, depth+1)
		case *ssa.Convert:
			return walk(v.X, depth+1)
		case *ssa.Phi:
			for _, e := range v.Edges {
				if !walk(e, depth+1) {
					return false
				}
			}
			return true
		case *ssa.FreeVar:
			bs := c.bindings(v)
			if len(bs) == 0 {
				out = append(out, v)
				return true
			}
			for _, b := range bs {
				if !walk(b, depth+1) {
					return false
				}
			}
			return true
		case *ssa.Parameter:
			args := c.paramArgs(v)
			if args == nil {
				out = append(out, v)
				return true
			}
			for _, a := range args {
				if !walk(a, depth+1) {
					return false
				}
			}
			return true
		}
		out = append(out, v)
		return true
	}
	if !walk(v, 0) {
		return nil
	}
	return out
}

// bindings returns the values bound to a free variable by the MakeClosure
// instructions that create its function.
func (c *checker) bindings(fv *ssa.FreeVar) []ssa.Value {
	fn := fv.Parent()
	idx := -1
	for i, f := range fn.FreeVars {
		if f == fv {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	var out []ssa.Value
	for _, mc := range c.closures[fn] {
		if idx < len(mc.Bindings) {
			out = append(out, mc.Bindings[idx])
		}
	}
	return out
}

// paramArgs returns the arguments passed for p at every call site of its
// function, or nil when the function may have callers the analyzer does not
// see (exported, address taken, called through an interface).
func (c *checker) paramArgs(p *ssa.Parameter) []ssa.Value {
	fn := p.Parent()
	if !c.allCallersKnown(fn) {
		return nil
	}
	idx := -1
	for i, q := range fn.Params {
		if q == p {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	var out []ssa.Value
	for _, site := range c.callers[fn] {
		common := site.Common()
		args := common.Args
		if common.IsInvoke() {
			return nil
		}
		if common.StaticCallee() == nil {
			// A call through a func value: a closure's or bound method's
			// parameters line up with the call's arguments.
			if fn.Signature.Recv() != nil {
				return nil
			}
		}
		if idx >= len(args) {
			return nil
		}
		out = append(out, args[idx])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// allCallersKnown reports whether every call of fn is a call site the
// analyzer sees: an unexported function or method of the package whose
// value is never taken, or a closure called only where it is made.
func (c *checker) allCallersKnown(fn *ssa.Function) bool {
	if len(c.callers[fn]) == 0 || c.addrTaken[fn] {
		return false
	}
	if fn.Parent() != nil {
		return true
	}
	obj, ok := fn.Object().(*types.Func)
	if !ok || obj.Exported() {
		return false
	}
	if sig := fn.Signature; sig.Recv() != nil {
		// An unexported method may still satisfy an interface of the package.
		return !c.ifaceMethods[obj.Name()]
	}
	return true
}

// slotKey returns the key of the slot at address addr: a field, a package
// variable or a captured local.
func (c *checker) slotKey(addr ssa.Value) key {
	switch a := addr.(type) {
	case *ssa.FieldAddr:
		if f := fieldOf(a); f != nil {
			return key{field: f}
		}
	case *ssa.Global:
		return key{global: a}
	case *ssa.Alloc:
		if a.Heap {
			return key{local: a}
		}
	case *ssa.FreeVar, *ssa.Parameter:
		os := c.origins(a)
		if len(os) == 1 && os[0] != addr {
			return c.slotKey(os[0])
		}
	}
	return key{}
}

// objKey returns the key of the object a pointer, channel or WaitGroup
// value refers to: the slot it was loaded from, or the local that made it.
func (c *checker) objKey(v ssa.Value) key {
	os := c.origins(v)
	if len(os) == 0 {
		return key{}
	}
	var k key
	for _, o := range os {
		var ok key
		switch o := o.(type) {
		case *ssa.UnOp:
			if o.Op == tokenMUL {
				ok = c.slotKey(o.X)
			}
		case *ssa.FieldAddr, *ssa.Global:
			ok = c.slotKey(o)
		case *ssa.Alloc:
			if o.Heap {
				ok = key{local: o}
			}
		case *ssa.MakeChan:
			ok = key{local: o}
		case *ssa.Call:
			// c.conn.Load() of an atomic.Pointer.
			if k2, op := c.atomicCall(o.Common()); op == "Load" {
				ok = k2
			}
		}
		if !ok.valid() {
			return key{}
		}
		if k.valid() && k != ok {
			return key{}
		}
		k = ok
	}
	return k
}

// fieldOf returns the field a FieldAddr selects.
func fieldOf(fa *ssa.FieldAddr) *types.Var {
	pt, ok := fa.X.Type().Underlying().(*types.Pointer)
	if !ok {
		return nil
	}
	st, ok := pt.Elem().Underlying().(*types.Struct)
	if !ok || fa.Field >= st.NumFields() {
		return nil
	}
	return st.Field(fa.Field)
}

// refType reports whether a value of type t panics or blocks when it is
// nil and used: pointer, map, chan, func, interface.
func refType(t types.Type) bool {
	switch t.Underlying().(type) {
	case *types.Pointer, *types.Map, *types.Chan, *types.Signature, *types.Interface:
		return true
	}
	return false
}

func isNilConst(v ssa.Value) bool {
	k, ok := v.(*ssa.Const)
	return ok && k.IsNil()
}

// outerField returns the field an address's struct was reached through —
// trInfo of s.trInfo.tr, whether trInfo holds the struct or points to it —
// or nil. Two accesses of one field reached through different fields are
// taken to be different objects.
func outerField(addr ssa.Value) *types.Var {
	fa, ok := addr.(*ssa.FieldAddr)
	if !ok {
		return nil
	}
	x := fa.X
	if ld, ok := x.(*ssa.UnOp); ok && ld.Op == tokenMUL {
		x = ld.X
	}
	if outer, ok := x.(*ssa.FieldAddr); ok {
		return fieldOf(outer)
	}
	return nil
}

// sameOwner reports whether two accesses of one field may be of the same
// object as far as the fields they were reached through tell.
func sameOwner(a, b ssa.Value) bool {
	oa, ob := outerField(a), outerField(b)
	return oa == nil || ob == nil || oa == ob
}

// oneActivation reports whether a and b access a captured local k of a
// function F only within one call of F: each is F itself or a closure of F
// that F calls or defers (directly, or through such closures), never starts
// on a goroutine or hands on. Such accesses of one call's variable run on
// the goroutine of that call, in program order; accesses in two calls are
// of two variables.
func (c *checker) oneActivation(k key, a, b *ssa.Function) bool {
	alloc, ok := k.local.(*ssa.Alloc)
	if !ok || !alloc.Heap {
		return false
	}
	owner := alloc.Parent()
	return c.runsInCall(owner, a) && c.runsInCall(owner, b)
}

// runsInCall reports whether fn is owner or a closure nested in owner that
// runs only on the call of owner that made it: every MakeClosure of it is
// only called or deferred where it is made, by a function that itself runs
// in owner's call.
func (c *checker) runsInCall(owner, fn *ssa.Function) bool {
	for depth := 0; fn != owner; depth++ {
		if fn == nil || fn.Parent() == nil || depth > maxOrigin {
			return false
		}
		mcs := c.closures[fn]
		if len(mcs) == 0 || c.spawnedClosure(fn) {
			return false
		}
		for _, mc := range mcs {
			if mc.Parent() != fn.Parent() || !calledInPlace(mc) {
				return false
			}
		}
		fn = fn.Parent()
	}
	return true
}

// calledInPlace reports whether a closure value is only called or deferred
// by the function that makes it: no go statement, no store, no argument.
func calledInPlace(mc *ssa.MakeClosure) bool {
	refs := mc.Referrers()
	if refs == nil || len(*refs) == 0 {
		return false
	}
	for _, r := range *refs {
		switch r := r.(type) {
		case *ssa.Call:
			if r.Call.Value != mc {
				return false
			}
		case *ssa.Defer:
			if r.Call.Value != mc {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// sameCall reports whether a and b are one function, or one is a closure
// the other only calls or defers where it makes it: one call runs both, on
// one goroutine, in program order (a deferred close after the sends).
func (c *checker) sameCall(a, b *ssa.Function) bool {
	return a == b || c.runsInCall(a, b) || c.runsInCall(b, a)
}
