// Check sites: the first half of a check-then-act (docs/algorithm.md,
// "Check-then-act pairs"). A goroutine that checks whether an object was
// disposed and then disposes it — `select { case <-x.done: default:
// close(x.done) }`, `if x.closed.Load() { return }; …; close(x.ch)` — is
// a double dispose waiting to happen when two goroutines both check
// before either acts. Passing runs never execute the second dispose, so
// the pair is between the two checks: the rewriter places a check hook
// right after each check, where a delay lets the other goroutine check
// too.
//
// Sites (kind "check"):
//   - each clause of a select statement with a default clause and a
//     receive case `<-E` on a channel E that is a pure expression: the
//     clause's body starts with _waflCheckChan(id, E) (E evaluated again;
//     pure, so the same channel);
//   - a load of a bool field (`x.closed`) or a call `E.Load()` on a
//     sync/atomic.Bool in the condition of an if statement, in a function
//     that closes a channel: _waflCheckFlag(id, &x.closed) and
//     _waflCheckAtomicBool(id, &E) load, then hook, then return the value;
//   - likewise a channel field compared with nil in such a condition
//     (`if x.ch != nil { close(x.ch); …; x.ch = nil }`):
//     _waflCheckField(id, &x.ch) loads, hooks, returns the channel;
//   - a comma-ok map lookup `v, ok := m[k]` (also `=`, `var v, ok = m[k]`)
//     of a shared map in a function that closes a channel or disposes of
//     a map entry: the lookup whose result the function goes on to
//     dispose (`if ok { delete(m, k); close(v.ch) }`). The right side
//     becomes _waflCheckLookup(id, m, k), which looks up, then hooks with
//     the entry (map, key) as the object (entries.go), then returns both
//     results. The goroutine that finds nothing (another removed the
//     entry) still checks, so the near miss is recorded.

package instrument

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/dave/dst"
)

// Helper names of the check hooks (checkHelperTemplate).
const (
	hCheckChan       = "_waflCheckChan"
	hCheckFlag       = "_waflCheckFlag"
	hCheckAtomicBool = "_waflCheckAtomicBool"
	hCheckLookup     = "_waflCheckLookup"
	hCheckField      = "_waflCheckField"
)

// actCheckLookup: a comma-ok map lookup m[k] -> _waflCheckLookup(id, m, k);
// actCheckField: a channel field compared with nil, x.ch ->
// _waflCheckField(id, &x.ch) (numbered apart from rewrite.go's list, like
// actHoist).
const (
	actCheckLookup actKind = 110
	actCheckField  actKind = 111
)

// checkHelperTemplate is appended to the generated helper file
// (helperSource). The send and close helpers call _waflSendSlow and
// _waflCloseSlow, so that detection runs see a panic the user recovers
// (hook.Send, hook.Close).
const checkHelperTemplate = `
func _waflCheckChan[C any](site uint32, ch C) {
	if _wafl.CurrentMode() != 0 {
		_waflCheckSlow(site, *(*_wafl_unsafe.Pointer)(_wafl_unsafe.Pointer(&ch)))
	}
}

func _waflCheckFlag[B ~bool](site uint32, p *B) B {
	v := *p
	if _waflOn() {
		_waflCheckSlow(site, _wafl_unsafe.Pointer(p))
	}
	return v
}

func _waflCheckField[T any](site uint32, p *T) T {
	v := *p
	if _waflOn() {
		_waflCheckSlow(site, _wafl_unsafe.Pointer(p))
	}
	return v
}

func _waflCheckAtomicBool(site uint32, p *_wafl_atomic.Bool) bool {
	v := p.Load()
	if _waflOn() {
		_waflCheckSlow(site, _wafl_unsafe.Pointer(p))
	}
	return v
}

func _waflCheckLookup[M ~map[K]V, K comparable, V any](site uint32, m M, k K) (V, bool) {
	v, ok := m[k]
	if _waflOn() {
		_waflEntryCheckSlow(site, m, k)
	}
	return v, ok
}

//go:noinline
func _waflCheckSlow(site uint32, obj _wafl_unsafe.Pointer) { _wafl.Check(site, obj) }

//go:noinline
func _waflSendSlow(site uint32, ch _wafl_unsafe.Pointer) { _wafl.Send(site, ch) }

//go:noinline
func _waflCloseSlow(site uint32, ch _wafl_unsafe.Pointer) { _wafl.Close(site, ch) }
`

// checkState is what the check collection remembers per file.
type checkState struct {
	// closers are the bodies of top-level functions that close a channel,
	// disposers those of the others that dispose of a map entry
	// (entries.go).
	closers, disposers []*ast.BlockStmt
}

// checkSelect records the check sites of a select statement with a
// default clause: one site per receive on a pure channel expression, its
// hook in every clause.
func (c *collector) checkSelect(n *ast.SelectStmt) {
	hasDefault := false
	var chans []ast.Expr
	for _, s := range n.Body.List {
		cc, ok := s.(*ast.CommClause)
		if !ok {
			continue
		}
		if cc.Comm == nil {
			hasDefault = true
			continue
		}
		if e := recvChan(cc.Comm); e != nil && isChanType(typeOf(c.info, e)) && c.pure(e) && c.sharedRoot(e) && !assignsIn(cc.Comm, e) {
			chans = append(chans, e)
		}
	}
	if !hasDefault || len(chans) == 0 {
		return
	}
	for _, e := range chans {
		id := c.site("check", e, e)
		for _, s := range n.Body.List {
			if cc, ok := s.(*ast.CommClause); ok {
				c.ed.add(cc, action{kind: actCheckChan, site: id, lhs: e})
			}
		}
	}
}

// recvChan returns E of a receive clause `<-E`, `v := <-E`, `v, ok = <-E`.
func recvChan(s ast.Stmt) ast.Expr {
	var x ast.Expr
	switch s := s.(type) {
	case *ast.ExprStmt:
		x = s.X
	case *ast.AssignStmt:
		if len(s.Rhs) == 1 {
			x = s.Rhs[0]
		}
	}
	if u, ok := ast.Unparen(x).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		return ast.Unparen(u.X)
	}
	return nil
}

// assignsIn reports whether the receive statement s defines or assigns a
// name that e mentions (evaluating e again in the clause body would then
// see another value).
func assignsIn(s ast.Stmt, e ast.Expr) bool {
	as, ok := s.(*ast.AssignStmt)
	if !ok {
		return false
	}
	names := map[string]bool{}
	for _, l := range as.Lhs {
		if id, ok := l.(*ast.Ident); ok {
			names[id.Name] = true
		}
	}
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && names[id.Name] {
			found = true
		}
		return !found
	})
	return found
}

// checkIf records the flag checks in the condition of an if statement in
// a function that closes a channel.
func (c *collector) checkIf(n *ast.IfStmt, file *ast.File) {
	if !c.inCloser(n, file) {
		return
	}
	ast.Inspect(n.Cond, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.FuncLit:
			return false
		case *ast.SelectorExpr:
			if c.flagField(x) && !c.ed.has(x, actCheckFlag) {
				c.ed.add(x, action{kind: actCheckFlag, site: c.site("check", x, x)})
			}
		case *ast.BinaryExpr:
			if f := c.nilComparedChanField(x); f != nil && !c.ed.has(f, actCheckField) {
				c.ed.add(f, action{kind: actCheckField, site: c.site("check", f, f)})
			}
		case *ast.CallExpr:
			if recv, isPtr, ok := c.atomicBoolLoad(x); ok && !c.ed.has(x, actCheckAtomicBool) {
				c.ed.add(x, action{kind: actCheckAtomicBool, site: c.site("check", x, recv), ptr: isPtr})
			}
		}
		return true
	})
}

// checkLookup records the check site of a comma-ok lookup `v, ok = m[k]`
// (lhs two names or expressions, rhs the one index expression) of a
// shared map in a function that closes a channel or disposes of a map
// entry (inDisposer). The object is the entry (map, key), so that only
// lookups of one key pair. The key's type must be the map's key type, so
// that the helper's type arguments are inferred.
func (c *collector) checkLookup(nlhs int, rhs []ast.Expr, at ast.Node) {
	if nlhs != 2 || len(rhs) != 1 {
		return
	}
	ix, ok := ast.Unparen(rhs[0]).(*ast.IndexExpr)
	if !ok {
		return
	}
	t := typeOf(c.info, ix.X)
	if t == nil || c.ed.has(ix, actCheckLookup) {
		return
	}
	if _, isParam := types.Unalias(t).(*types.TypeParam); isParam {
		return
	}
	mt, ok := under(t).(*types.Map)
	if !ok {
		return
	}
	// A constant key is left alone: how an untyped constant argument is
	// inferred depends on the module's language version.
	kt := typeOf(c.info, ix.Index)
	if kt == nil || c.info.Types[ix.Index].Value != nil || !types.Identical(kt, mt.Key()) || !c.sharedMap(ix.X) || !c.inDisposer(at) {
		return
	}
	text := exprString(c.fset, ix.X) + "[" + exprString(c.fset, ix.Index) + "]"
	c.ed.add(ix, action{kind: actCheckLookup, site: c.siteText("check", ix, text, slotTypeString("check", typeOf(c.info, ix.X)))})
}

// inCloser reports whether n lies in a top-level function of file that
// closes a channel.
func (c *collector) inCloser(n ast.Node, file *ast.File) bool {
	if c.chk == nil {
		c.chk = &checkState{}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			closes := false
			ast.Inspect(fd.Body, func(x ast.Node) bool {
				if call, ok := x.(*ast.CallExpr); ok {
					if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
						if b, ok := c.info.Uses[id].(*types.Builtin); ok && b.Name() == "close" {
							closes = true
						}
					}
				}
				return !closes
			})
			if closes {
				c.chk.closers = append(c.chk.closers, fd.Body)
			} else if c.entryDisposes(fd.Body) {
				c.chk.disposers = append(c.chk.disposers, fd.Body)
			}
		}
	}
	for _, b := range c.chk.closers {
		if b.Pos() <= n.Pos() && n.End() <= b.End() {
			return true
		}
	}
	return false
}

// sharedFieldType returns the type of x when x is a pure, addressable
// field of a shared object (a field a check can hook by its address),
// else nil. The flag, channel-field and state checks share it.
func (c *collector) sharedFieldType(x *ast.SelectorExpr) types.Type {
	sel := c.info.Selections[x]
	if sel == nil || sel.Kind() != types.FieldVal {
		return nil
	}
	tv, ok := c.info.Types[x]
	if !ok || !tv.Addressable() || !c.pure(x) || !c.sharedRoot(x) {
		return nil
	}
	return tv.Type
}

// flagField reports whether x is a shared bool field read by value.
func (c *collector) flagField(x *ast.SelectorExpr) bool {
	b, ok := under(c.sharedFieldType(x)).(*types.Basic)
	return ok && b.Kind() == types.Bool
}

// nilComparedChanField returns the channel field x.f of a comparison
// `x.f == nil` or `x.f != nil` (either side), when x.f is a pure,
// addressable field of a shared object; otherwise nil.
func (c *collector) nilComparedChanField(b *ast.BinaryExpr) *ast.SelectorExpr {
	if b.Op != token.EQL && b.Op != token.NEQ {
		return nil
	}
	for _, pair := range [][2]ast.Expr{{b.X, b.Y}, {b.Y, b.X}} {
		if tv, ok := c.info.Types[pair[1]]; !ok || !tv.IsNil() {
			continue
		}
		x, ok := ast.Unparen(pair[0]).(*ast.SelectorExpr)
		if !ok {
			continue
		}
		if _, isChan := under(c.sharedFieldType(x)).(*types.Chan); isChan {
			return x
		}
	}
	return nil
}

// atomicBoolLoad reports whether call is E.Load() on a sync/atomic.Bool
// (E addressable, or a pointer to one) and returns E.
func (c *collector) atomicBoolLoad(call *ast.CallExpr) (recv ast.Expr, isPtr, ok bool) {
	fsel, ok2 := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok2 || fsel.Sel.Name != "Load" || len(call.Args) != 0 {
		return nil, false, false
	}
	t := typeOf(c.info, fsel.X)
	if p, ok := t.(*types.Pointer); ok {
		t, isPtr = p.Elem(), true
	}
	named, ok2 := types.Unalias(t).(*types.Named)
	if !ok2 || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != "sync/atomic" || named.Obj().Name() != "Bool" {
		return nil, false, false
	}
	if !isPtr && !c.info.Types[fsel.X].Addressable() {
		return nil, false, false
	}
	return fsel.X, isPtr, true
}

// preChecks takes, top-down, pristine copies of the channel expressions
// of check clauses before their own subexpressions are rewritten.
func (ap *applier) preChecks(n dst.Node) {
	sel, ok := n.(*dst.SelectStmt)
	if !ok {
		return
	}
	for _, s := range sel.Body.List {
		cc, ok := s.(*dst.CommClause)
		if !ok || cc.Comm == nil {
			continue
		}
		var x dst.Expr
		switch st := cc.Comm.(type) {
		case *dst.ExprStmt:
			x = st.X
		case *dst.AssignStmt:
			if len(st.Rhs) == 1 {
				x = st.Rhs[0]
			}
		}
		for {
			p, ok := x.(*dst.ParenExpr)
			if !ok {
				break
			}
			x = p.X
		}
		u, ok := x.(*dst.UnaryExpr)
		if !ok || u.Op != token.ARROW {
			continue
		}
		e := unparen(u.X)
		if a, ok := ap.nodes[e].(ast.Expr); ok {
			ap.clones[a] = cleanClone(e)
		}
	}
}

// editCheck carries out a check action on n, decorated from a.
func (ap *applier) editCheck(act action, n dst.Node) dst.Node {
	switch act.kind {
	case actCheckChan:
		cc := n.(*dst.CommClause)
		src := ap.clones[act.lhs]
		if src == nil {
			return n
		}
		st := &dst.ExprStmt{X: call(hCheckChan, siteLit(act.site), cleanClone(src))}
		cc.Body = append([]dst.Stmt{st}, cc.Body...)
		return cc
	case actCheckFlag:
		return call(hCheckFlag, siteLit(act.site), addr(n.(dst.Expr)))
	case actCheckField, actCheckState:
		return call(hCheckField, siteLit(act.site), addr(n.(dst.Expr)))
	case actCheckLookup:
		ix := n.(*dst.IndexExpr)
		out := call(hCheckLookup, siteLit(act.site), ix.X, ix.Index)
		out.Decs.NodeDecs = ix.Decs.NodeDecs
		return out
	case actCheckAtomicBool:
		ce := n.(*dst.CallExpr)
		recv := unparen(ce.Fun).(*dst.SelectorExpr).X
		if !act.ptr {
			recv = addr(recv)
		}
		out := call(hCheckAtomicBool, siteLit(act.site), recv)
		out.Decs = ce.Decs
		return out
	}
	return n
}
