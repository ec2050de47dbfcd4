// Creation context of func values: a function literal or method value
// handed to code wafl did not instrument (time.AfterFunc, context.AfterFunc,
// errgroup's Go, worker pools, net/http handlers, t.Run) may run on a
// goroutine that code started, which has no instrumented go statement and
// so no parent. At the call that hands it over, the value is wrapped so
// that, when it runs on another goroutine than its creator, that goroutine
// adopts a fork token taken where the value was handed over: the creator's
// earlier events happen before everything the callback does (thesis §4.3:
// C#'s logical call context flows through timers and the thread pool).
// With the hooks off the wrapper returns the value itself.

package instrument

import (
	"go/ast"
	"go/types"
)

// ctxHelper returns the wrapper helper for a func value of signature sig,
// or "" when there is none: func(), func() R, func(A), func(A) R,
// func(A, B), not variadic.
func ctxHelper(sig *types.Signature) string {
	if sig.Variadic() || sig.TypeParams() != nil || sig.Results().Len() > 1 {
		return ""
	}
	res := sig.Results().Len() == 1
	switch sig.Params().Len() {
	case 0:
		if res {
			return hCtxR
		}
		return hCtx0
	case 1:
		if res {
			return hCtxAR
		}
		return hCtxA
	case 2:
		if !res {
			return hCtxAB
		}
	}
	return ""
}

// funcArgs records the wrapping of function literals and method values
// passed to a function or method of another package (a static call, or a
// call of an interface method): code this build may not instrument.
func (c *collector) funcArgs(call *ast.CallExpr) {
	sig, ok := under(typeOf(c.info, call.Fun)).(*types.Signature)
	if !ok || !c.foreignCallee(call) {
		return
	}
	testing := ""
	if fn := c.callee(call); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "testing" {
		testing = fn.Name()
	}
	if testing == "Cleanup" {
		// Cleanups run on the test's own goroutine; a wrapper would be a
		// frame of wafl's that a failing helper cleanup's report cites.
		return
	}
	for i, a := range call.Args {
		if !c.isFuncValue(a) {
			continue
		}
		var pt types.Type
		switch {
		case sig.Variadic() && i >= sig.Params().Len()-1:
			continue
		case i < sig.Params().Len():
			pt = sig.Params().At(i).Type()
		default:
			continue
		}
		if types.IsInterface(pt) {
			continue // the helper's result is a func: it would not convert
		}
		asig, ok := typeOf(c.info, a).(*types.Signature)
		if !ok {
			continue
		}
		h := ctxHelper(asig)
		if testing == "Run" && h == hCtxA {
			// A subtest (or sub-benchmark) function: its wrapper marks
			// itself a test helper, so failures cite the user's lines.
			h = hCtxT
		}
		if h != "" && !c.ed.has(a, actCtx) {
			c.ed.add(a, action{kind: actCtx, op: h})
			c.ed.numCtx++
		}
	}
}

// callee returns the function or method call statically calls, or nil.
func (c *collector) callee(call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch x := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	case *ast.IndexExpr:
		return c.callee(&ast.CallExpr{Fun: x.X})
	case *ast.IndexListExpr:
		return c.callee(&ast.CallExpr{Fun: x.X})
	default:
		return nil
	}
	fn, _ := c.info.Uses[id].(*types.Func)
	return fn
}

// foreignCallee reports whether call statically calls a function or
// method declared in another package.
func (c *collector) foreignCallee(call *ast.CallExpr) bool {
	fn := c.callee(call)
	return fn != nil && fn.Pkg() != nil && fn.Pkg() != c.pkg
}

// isFuncValue reports whether e is a function literal or a method value
// (x.M not called), whose type is an unnamed signature.
func (c *collector) isFuncValue(e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.FuncLit:
		return true
	case *ast.SelectorExpr:
		sel := c.info.Selections[x]
		return sel != nil && sel.Kind() == types.MethodVal
	}
	return false
}
