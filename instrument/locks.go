// Hoisting: a site inside a critical section is delayed before the lock.
//
// When an init or use runs between mu.Lock() and mu.Unlock() (or RLock and
// RUnlock), a delay injected at the site itself is taken with the lock held:
// the other goroutine just waits on the lock and no delay length exposes the
// bug. hoistLocks finds such sites after collection and marks the lock call
// so that the site's delay is injected before the Lock/RLock call instead
// (hook.Before); the site table records the guarding call (sites.Guard).
//
// A critical section is, in one statement list, the statements after an
// expression statement X.Lock() or X.RLock() of a sync.Mutex or
// sync.RWMutex (also through embedding) up to the matching X.Unlock() or
// X.RUnlock() in the same list, or to the end of the list when a
// `defer X.Unlock()` follows the lock or there is no unlock in the list.
// Function literals inside a section run in their own time and are left out.
// A call inside a section of a function or method declared in the same file
// (the method that locks and calls a helper) guards the helper's sites too,
// one level deep. A site guarded twice keeps the outermost lock, unless an
// inner one is a lock that also guards, in the same file, another site of
// the same field (the lock that protects the field): then the outermost of
// those. A delay before an outer lock the other goroutine never takes would
// also hold back what the site's goroutine does under it before the inner
// lock (radix's Subscribe: under cmdL, it reads c.subs under csL.RLock,
// then writes it under csL.Lock, while the reader sets c.subs = nil under
// csL alone; the delay belongs between the RUnlock and the Lock).

package instrument

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"sort"

	"github.com/dave/dst"

	"github.com/memorder/wafl/instrument/sites"
)

// actHoist marks the receiver X of a guarding X.Lock()/X.RLock() call:
// X -> _waflHoist(id, X) (or (*_waflHoist(id, &X)) for a non-pointer X),
// once per guarded site; action.ptr says X is a pointer.
const actHoist actKind = 100

// hHoist is the helper that injects a hoisted site's delay.
const hHoist = "_waflHoist"

// lockCall is one guarding Lock/RLock expression statement.
type lockCall struct {
	call  *ast.CallExpr
	recv  ast.Expr
	ptr   bool
	text  string // "s.mu.Lock()"
	guard *sites.Guard
}

// hoistLocks marks the Lock/RLock calls that guard sites of ed in file and
// records the guards in the site table.
func hoistLocks(fset *token.FileSet, info *types.Info, alloc *SiteAlloc, file *ast.File, ed *edits) {
	if info == nil || len(ed.acts) == 0 {
		return
	}
	h := &hoister{fset: fset, info: info, alloc: alloc, ed: ed, guarded: map[uint32][]*lockCall{},
		fields: map[uint32]types.Object{}, decls: map[types.Object]*ast.FuncDecl{}, held: map[uint32]bool{}}
	for n, acts := range ed.acts {
		for _, a := range acts {
			if a.kind == actHoist {
				continue
			}
			if a.kind == actTuple {
				for _, s := range a.slots {
					h.sitePos = append(h.sitePos, sitePos{s.site, n.Pos()})
				}
			} else if heldCheck(a) {
				h.sitePos = append(h.sitePos, sitePos{a.site, n.Pos()})
				h.held[a.site] = true
			} else if hoistable(a.kind) || entryHoistable(a) {
				h.sitePos = append(h.sitePos, sitePos{a.site, n.Pos()})
				slot, _ := n.(ast.Expr)
				if a.kind == actStore {
					slot = a.lhs
				}
				if f := h.fieldOf(slot); f != nil {
					h.fields[a.site] = f
				}
			}
		}
	}
	if len(h.sitePos) == 0 {
		return
	}
	sort.Slice(h.sitePos, func(i, j int) bool { return h.sitePos[i].pos < h.sitePos[j].pos })
	for _, d := range file.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			if obj := info.Defs[fd.Name]; obj != nil {
				h.decls[obj] = fd
			}
		}
	}
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		h.body(fd.Body)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok {
				h.body(lit.Body)
			}
			return true
		})
	}
	// One actHoist per guarded site, on the receiver of its guard, in
	// site order.
	ids := make([]uint32, 0, len(h.guarded))
	for id := range h.guarded {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	index := make(map[uint32]int, len(alloc.sites))
	for i := range alloc.sites {
		index[alloc.sites[i].ID] = i
	}
	for _, id := range ids {
		i, ok := index[id]
		if id == 0 || !ok {
			continue
		}
		lc := h.pick(id)
		if h.held[id] {
			alloc.sites[i].Held = lc.guard
			continue
		}
		alloc.sites[i].Guard = lc.guard
		ed.add(lc.recv, action{kind: actHoist, site: id, ptr: lc.ptr})
	}
}

// pick chooses the lock a guarded site's delay goes before: the outermost,
// unless the site's field has other sites guarded by some of the site's
// locks, then the outermost of those.
func (h *hoister) pick(id uint32) *lockCall {
	lcs := h.guarded[id]
	f := h.fields[id]
	if len(lcs) < 2 || f == nil {
		return lcs[0]
	}
	for _, lc := range lcs {
		key := h.lockKey(lc)
		for other, of := range h.fields {
			if other == id || of != f {
				continue
			}
			for _, olc := range h.guarded[other] {
				if h.lockKey(olc) == key {
					return lc
				}
			}
		}
	}
	return lcs[0]
}

// lockKey identifies a lock across functions: the field a lock call's
// receiver selects (c.mu and s.mu of the same struct type are one lock
// here), else the receiver's text.
func (h *hoister) lockKey(lc *lockCall) any {
	if f := h.fieldOf(lc.recv); f != nil {
		return f
	}
	return exprString(h.fset, lc.recv)
}

// fieldOf returns the field e selects (x.f), or nil.
func (h *hoister) fieldOf(e ast.Expr) types.Object {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	s := h.info.Selections[sel]
	if s == nil || s.Kind() != types.FieldVal {
		return nil
	}
	return s.Obj()
}

type sitePos struct {
	id  uint32
	pos token.Pos
}

type hoister struct {
	fset    *token.FileSet
	info    *types.Info
	alloc   *SiteAlloc
	ed      *edits
	sitePos []sitePos               // every site of the file, by position
	guarded map[uint32][]*lockCall  // in the order found: outermost first
	held    map[uint32]bool         // check sites: guards recorded, not hoisted (heldCheck)
	fields  map[uint32]types.Object // the field a site accesses, if any
	decls   map[types.Object]*ast.FuncDecl
}

// body finds the critical sections of one function body (not of the
// function literals in it, which hoistLocks visits on their own).
func (h *hoister) body(b *ast.BlockStmt) {
	var lists func(n ast.Node)
	lists = func(root ast.Node) {
		ast.Inspect(root, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.BlockStmt:
				h.list(n.List)
			case *ast.CaseClause:
				h.list(n.Body)
			case *ast.CommClause:
				h.list(n.Body)
			}
			return true
		})
	}
	lists(b)
}

// list finds the sections that start in one statement list.
func (h *hoister) list(stmts []ast.Stmt) {
	for i, st := range stmts {
		lc := h.lockOf(st, "Lock", "RLock")
		if lc == nil {
			continue
		}
		unlock := map[string]string{"Lock": "Unlock", "RLock": "RUnlock"}[lc.call.Fun.(*ast.SelectorExpr).Sel.Name]
		end := len(stmts)
		for j := i + 1; j < len(stmts); j++ {
			if d, ok := stmts[j].(*ast.DeferStmt); ok && h.sameLock(d.Call, lc, unlock) {
				end = len(stmts)
				break
			}
			if es, ok := stmts[j].(*ast.ExprStmt); ok {
				if c, ok := es.X.(*ast.CallExpr); ok && h.sameLock(c, lc, unlock) {
					end = j
					break
				}
			}
		}
		for _, st := range stmts[i+1 : end] {
			h.guard(st, lc, true)
		}
	}
}

// guard marks the sites under n (outside function literals) as guarded by
// lc and, when helpers is set, the sites of same-file functions n calls.
func (h *hoister) guard(n ast.Node, lc *lockCall, helpers bool) {
	var lits []*ast.FuncLit
	ast.Inspect(n, func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.FuncLit:
			lits = append(lits, m)
			return false
		case *ast.CallExpr:
			if helpers {
				if fd := h.callee(m); fd != nil {
					h.guard(fd.Body, lc, false)
				}
			}
		}
		return true
	})
	lo, hi := n.Pos(), n.End()
	k := sort.Search(len(h.sitePos), func(i int) bool { return h.sitePos[i].pos >= lo })
	for ; k < len(h.sitePos) && h.sitePos[k].pos < hi; k++ {
		sp := h.sitePos[k]
		inLit := false
		for _, l := range lits {
			if sp.pos >= l.Pos() && sp.pos < l.End() {
				inLit = true
				break
			}
		}
		if inLit {
			continue
		}
		if !slices.Contains(h.guarded[sp.id], lc) {
			h.guarded[sp.id] = append(h.guarded[sp.id], lc)
		}
	}
}

// callee returns the declaration, in this file, of the function or method
// call c calls statically.
func (h *hoister) callee(c *ast.CallExpr) *ast.FuncDecl {
	var id *ast.Ident
	switch f := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		return nil
	}
	obj, ok := h.info.Uses[id].(*types.Func)
	if !ok {
		return nil
	}
	return h.decls[obj]
}

// lockOf returns the lock call of statement st when it is X.<one of
// names>() on a sync.Mutex or sync.RWMutex.
func (h *hoister) lockOf(st ast.Stmt, names ...string) *lockCall {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return nil
	}
	c, ok := es.X.(*ast.CallExpr)
	if !ok || len(c.Args) != 0 {
		return nil
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || !h.syncLockMethod(sel, names...) {
		return nil
	}
	recvT := h.info.TypeOf(sel.X)
	if recvT == nil {
		return nil
	}
	_, ptr := recvT.Underlying().(*types.Pointer)
	if !ptr && !addressable(sel.X) {
		return nil
	}
	pos := h.fset.Position(c.Pos())
	text := exprString(h.fset, c)
	return &lockCall{call: c, recv: sel.X, ptr: ptr, text: text,
		guard: &sites.Guard{Call: text, File: pos.Filename, Line: pos.Line, Col: pos.Column}}
}

// syncLockMethod reports whether sel selects one of the named methods of
// sync.Mutex or sync.RWMutex (directly or through embedding).
func (h *hoister) syncLockMethod(sel *ast.SelectorExpr, names ...string) bool {
	found := false
	for _, n := range names {
		found = found || sel.Sel.Name == n
	}
	if !found {
		return false
	}
	s := h.info.Selections[sel]
	if s == nil || s.Kind() != types.MethodVal {
		return false
	}
	fn, ok := s.Obj().(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "sync" {
		return false
	}
	recv := fn.Type().(*types.Signature).Recv()
	if recv == nil {
		return false
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	nt, ok := t.(*types.Named)
	return ok && (nt.Obj().Name() == "Mutex" || nt.Obj().Name() == "RWMutex")
}

// sameLock reports whether c is X.<name>() on the receiver of lc (the same
// source text).
func (h *hoister) sameLock(c *ast.CallExpr, lc *lockCall, name string) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name || len(c.Args) != 0 {
		return false
	}
	return exprString(h.fset, sel.X) == exprString(h.fset, lc.recv)
}

// addressable reports whether &x is valid Go for the receiver expressions a
// Lock call can have: identifiers, selectors, index expressions and
// pointer indirections.
func addressable(x ast.Expr) bool {
	switch x := ast.Unparen(x).(type) {
	case *ast.Ident, *ast.StarExpr:
		return true
	case *ast.SelectorExpr:
		return true
	case *ast.IndexExpr:
		return addressable(x.X)
	}
	return false
}

// hoistRecv rewrites the receiver x of a guarding lock call for one
// guarded site.
func hoistRecv(act action, x dst.Expr) dst.Expr {
	if act.ptr {
		return call(hHoist, siteLit(act.site), x)
	}
	return paren(&dst.StarExpr{X: call(hHoist, siteLit(act.site), addr(x))})
}

// hoistable reports whether an action of kind k carries a site id of an
// access a delay may be injected at.
// heldCheck reports whether a is a check whose delay comes after the
// check and so is not hoisted: the site table records the lock it is
// taken under (sites.Site.Held) instead. A state check is hoisted
// (states.go).
func heldCheck(a action) bool {
	switch a.kind {
	case actCheckChan, actCheckFlag, actCheckField, actCheckAtomicBool, actCheckLookup:
		return true
	case actSyncMap:
		return a.op == hSyncCheck
	}
	return false
}

func hoistable(k actKind) bool {
	switch k {
	case actUse, actStore, actSend, actClose, actAtomicUse, actAtomicStore, actCheckState:
		return true
	}
	return false
}
