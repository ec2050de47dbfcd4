// Map entries as objects (docs/instrumentation.md, "Map entries"). One
// goroutine deletes m[k] (or stores nil into it) while another looks the
// entry up and dereferences what it found: the nil it gets is a MEMORDER
// bug like a nil field, but the entry is not a slot (a map element has no
// address). Its object is the pair (map, key) instead: the runtime hashes
// the key into an id apart from every address (hook.EntryUse and friends,
// abi.EntryObj), and the events are the usual ones:
//
//   - m[k] = v: init (v non-nil), dispose (v nil), or decided at run time;
//   - delete(m, k): dispose;
//   - a lookup m[k] whose value is dereferenced, called, closed or
//     type-asserted, directly (m[k].f, m[k].M(), m[k](), *m[k],
//     close(m[k]), m[k][j] = v, m[k].(T)) or through a local, an argument
//     or a result (the loads pass, loads.go): use, before the lookup,
//     where a delay lets the delete come first. Not a lookup that is only
//     sent on (m[k] <- v, or through a local): the nil channel of a
//     deleted entry blocks the send instead of panicking, and the send's
//     own site, after the lookup, is the delay that lets a close come
//     first (percipia/eslgo's receive loop: a delay before the lookup made
//     the send block on nil and the bug was never exposed);
//   - a comma-ok lookup v, ok := m[k] in a function that closes a channel
//     or disposes of a map entry: check (checks.go), after the lookup.
//
// sync.Map the same: Store, LoadOrStore, Swap and CompareAndSwap store
// (init, or dispose for a nil value), Delete, LoadAndDelete and
// CompareAndDelete dispose, Load is a use when its value reaches a
// dereference and the ok result is dropped, and a check when ok is kept.
//
// Only maps whose element type is reference-like (pointer, map, chan,
// func, interface), as for slots, and only shared ones: the map
// expression is a slot's storage another goroutine can reach (a field, a
// package variable, a shared local) or a local or parameter that does not
// hold a map the function made itself. The key must have the map's key
// type or be a constant (the helpers infer their type arguments from the
// map). What is left alone on purpose is noted.

package instrument

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/dave/dst"
)

// Helper names of the map entry hooks (entryHelperTemplate).
const (
	hEntryKey      = "_waflEntryKey"
	hEntryUse      = "_waflEntryUse"
	hEntryInit     = "_waflEntryInit"
	hEntryStore    = "_waflEntryStore"
	hEntryNil      = "_waflEntryNil"
	hEntryDelete   = "_waflEntryDelete"
	hEntryDeleted  = "_waflEntryDeleted"
	hSyncStore     = "_waflSyncStore"
	hSyncLoadStore = "_waflSyncLoadOrStore"
	hSyncSwap      = "_waflSyncSwap"
	hSyncCAS       = "_waflSyncCAS"
	hSyncDelete    = "_waflSyncDelete"
	hSyncLoadDel   = "_waflSyncLoadAndDelete"
	hSyncCAD       = "_waflSyncCAD"
	hSyncLoad      = "_waflSyncLoad"
	hSyncCheck     = "_waflSyncCheck"
)

// Actions on map entries (numbered apart from rewrite.go's list, like
// actCheckLookup).
const (
	// actEntryUse: a lookup m[k] -> m[_waflEntryKey(id, m, k)] when m is
	// pure (action.ptr), _waflEntryUse(id, m, k) otherwise.
	actEntryUse actKind = 120 + iota
	// actEntryStore: the value V of m[k] = V -> _waflEntryInit/…(id, V, m, k)
	// (lhs: the index expression, evaluated again: pure).
	actEntryStore
	// actEntryDelete: delete(m, k) -> _waflEntryDelete(id, m, k), a
	// dispose when the entry is there: deleting no entry disposes of none.
	actEntryDelete
	// actSyncMap: E.Method(args) on a sync.Map -> op(id, &E, args…) (op:
	// the helper).
	actSyncMap
)

// entryHelperTemplate is appended to the generated helper file. The map
// and the key are the helpers' arguments, and a helper that accesses the
// map makes the access the user's code made; _waflEntryKey only hooks and
// returns the key, leaving the user's index expression in place (which
// evaluates the map, pure, a second time), to stay within the inlining
// budget. The runtime hashes the key only when the hooks are on.
const entryHelperTemplate = `
func _waflEntryKey[M ~map[K]V, K comparable, V any](site uint32, m M, k K) K {
	if _wafl.CurrentMode() != 0 {
		_waflEntryUseSlow(site, m, k)
	}
	return k
}

func _waflEntryUse[M ~map[K]V, K comparable, V any](site uint32, m M, k K) V {
	if _wafl.CurrentMode() != 0 {
		_waflEntryUseSlow(site, m, k)
	}
	return m[k]
}

func _waflEntryInit[V any, M ~map[K]W, K comparable, W any](site uint32, v V, m M, k K) V {
	if _wafl.CurrentMode() != 0 {
		_waflEntryInitSlow(site, m, k)
	}
	return v
}

func _waflEntryStore[V any, M ~map[K]W, K comparable, W any](site uint32, v V, m M, k K) V {
	if _wafl.CurrentMode() != 0 {
		_waflEntryStoreSlow(site, m, k, v)
	}
	return v
}

func _waflEntryNil[M ~map[K]V, K comparable, V any](site uint32, m M, k K) (zero V) {
	if _wafl.CurrentMode() != 0 {
		_waflEntryDisposeSlow(site, m, k)
	}
	return zero
}

// _waflEntryDeleted records, before delete(m, k), the dispose of m[k]
// when m holds k: a delete of no entry disposes of none, and a loop that
// deletes keys never stored would fill the trace. The rewrite calls it
// under if _waflOn() { … } before a delete statement, which stays as it is.
func _waflEntryDeleted[M ~map[K]V, K comparable, V any](site uint32, m M, k K) {
	if _, ok := m[k]; ok {
		_waflEntryDisposeSlow(site, m, k)
	}
}

// _waflEntryDelete is delete(m, k) where no statement can go before it
// (defer delete(m, k), the post statement of a for loop).
func _waflEntryDelete[M ~map[K]V, K comparable, V any](site uint32, m M, k K) {
	if _waflOn() {
		_waflEntryDeleted(site, m, k)
	}
	delete(m, k)
}

// The out-of-line parts take the map (or the *sync.Map) and the key as
// interfaces, which neither allocate nor escape (hook.EntryUse), so that
// the helpers above stay within the inlining budget.

//go:noinline
func _waflEntryUseSlow(site uint32, m, k any) { _wafl.EntryUse(site, m, k) }

//go:noinline
func _waflEntryInitSlow(site uint32, m, k any) { _wafl.EntryInit(site, m, k) }

//go:noinline
func _waflEntryStoreSlow(site uint32, m, k, v any) { _wafl.EntryStore(site, m, k, v) }

//go:noinline
func _waflEntryDisposeSlow(site uint32, m, k any) { _wafl.EntryDispose(site, m, k) }

//go:noinline
func _waflEntryCheckSlow(site uint32, m, k any) { _wafl.EntryCheck(site, m, k) }

// sync.Map: the entry of key k of the map at m.

func _waflSyncStore(site uint32, m *_wafl_sync.Map, k, v any) {
	if _waflOn() {
		_waflEntryStoreSlow(site, m, k, v)
	}
	m.Store(k, v)
}

func _waflSyncLoadOrStore(site uint32, m *_wafl_sync.Map, k, v any) (any, bool) {
	if _waflOn() {
		_waflEntryStoreSlow(site, m, k, v)
	}
	return m.LoadOrStore(k, v)
}

func _waflSyncSwap(site uint32, m *_wafl_sync.Map, k, v any) (any, bool) {
	if _waflOn() {
		_waflEntryStoreSlow(site, m, k, v)
	}
	return m.Swap(k, v)
}

func _waflSyncCAS(site uint32, m *_wafl_sync.Map, k, old, v any) bool {
	if _waflOn() {
		_waflEntryStoreSlow(site, m, k, v)
	}
	return m.CompareAndSwap(k, old, v)
}

func _waflSyncDelete(site uint32, m *_wafl_sync.Map, k any) {
	if _waflOn() {
		_waflEntryDisposeSlow(site, m, k)
	}
	m.Delete(k)
}

func _waflSyncLoadAndDelete(site uint32, m *_wafl_sync.Map, k any) (any, bool) {
	if _waflOn() {
		_waflEntryDisposeSlow(site, m, k)
	}
	return m.LoadAndDelete(k)
}

func _waflSyncCAD(site uint32, m *_wafl_sync.Map, k, old any) bool {
	if _waflOn() {
		_waflEntryDisposeSlow(site, m, k)
	}
	return m.CompareAndDelete(k, old)
}

func _waflSyncLoad(site uint32, m *_wafl_sync.Map, k any) (any, bool) {
	if _waflOn() {
		_waflEntryUseSlow(site, m, k)
	}
	return m.Load(k)
}

func _waflSyncCheck(site uint32, m *_wafl_sync.Map, k any) (any, bool) {
	v, ok := m.Load(k)
	if _waflOn() {
		_waflEntryCheckSlow(site, m, k)
	}
	return v, ok
}
`

// entryInfo is what collection knows of a map entry expression.
type entryInfo struct {
	m, k ast.Expr   // the map and the key
	elem types.Type // the map's element type
	text string     // "m[k]", the site table's expression
}

// entry reports whether e (parentheses aside) is a lookup m[k] of a map
// entry wafl treats as an object: a shared map (not a type parameter) of
// reference-like elements, keyed by a value of its key type or a
// constant.
func (c *collector) entry(e ast.Expr) (entryInfo, bool) {
	ix, ok := ast.Unparen(e).(*ast.IndexExpr)
	if !ok {
		return entryInfo{}, false
	}
	return c.entryOf(ix.X, ix.Index, ix)
}

// entryOf is entry for the map m and the key k (of an index expression or
// of delete(m, k)); at is the node the site is reported at.
func (c *collector) entryOf(m, k ast.Expr, at ast.Node) (entryInfo, bool) {
	t := typeOf(c.info, m)
	if t == nil {
		return entryInfo{}, false
	}
	if _, isParam := types.Unalias(t).(*types.TypeParam); isParam {
		return entryInfo{}, false
	}
	mt, ok := under(t).(*types.Map)
	if !ok || refKind(mt.Elem()) == "" || !c.sharedMap(m) {
		return entryInfo{}, false
	}
	if !c.entryKey(mt, k) {
		c.noteOnce(at, "map entry %s[%s] left alone: the key's type is not the map's key type", exprString(c.fset, m), exprString(c.fset, k))
		return entryInfo{}, false
	}
	return entryInfo{m: m, k: k, elem: mt.Elem(), text: exprString(c.fset, m) + "[" + exprString(c.fset, k) + "]"}, true
}

// entryKey reports whether k can be handed to the helpers as the key of
// a map of type mt: of the map's key type, or a constant the map's key
// type is inferred for.
func (c *collector) entryKey(mt *types.Map, k ast.Expr) bool {
	tv, ok := c.info.Types[k]
	if !ok || tv.Type == nil {
		return false
	}
	return tv.Value != nil || types.Identical(tv.Type, mt.Key())
}

// sharedMap reports whether the map m may be one another goroutine
// reaches: a slot's storage (sharedRoot), or a local or parameter that
// does not hold a map of the function's own making (made with make or a
// composite literal, and not a shared local).
func (c *collector) sharedMap(m ast.Expr) bool {
	m = ast.Unparen(m)
	if c.sharedRoot(m) {
		return true
	}
	id, ok := m.(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := c.info.Uses[id].(*types.Var)
	if !ok || v.IsField() {
		return false
	}
	return !c.freshMaps()[v]
}

// freshMaps returns the locals of the file that are ever assigned a map
// made on the spot (make, or a composite literal): maps a function builds
// for itself. Computed once per file.
func (c *collector) freshMaps() map[*types.Var]bool {
	if c.fresh != nil {
		return c.fresh
	}
	c.fresh = map[*types.Var]bool{}
	made := func(e ast.Expr) bool {
		switch x := ast.Unparen(e).(type) {
		case *ast.CompositeLit:
			return true
		case *ast.CallExpr:
			if id, ok := ast.Unparen(x.Fun).(*ast.Ident); ok {
				if b, ok := c.info.Uses[id].(*types.Builtin); ok && b.Name() == "make" {
					return true
				}
			}
		}
		return false
	}
	mark := func(id *ast.Ident) {
		v, ok := c.info.Defs[id].(*types.Var)
		if !ok {
			v, ok = c.info.Uses[id].(*types.Var)
		}
		if ok && !v.IsField() && !isPackageLevel(v) {
			c.fresh[v] = true
		}
	}
	ast.Inspect(c.file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i, r := range n.Rhs {
					if id, ok := n.Lhs[i].(*ast.Ident); ok && made(r) {
						mark(id)
					}
				}
			}
		case *ast.ValueSpec:
			for i, r := range n.Values {
				if i < len(n.Names) && made(r) {
					mark(n.Names[i])
				}
			}
		}
		return true
	})
	return c.fresh
}

// entrySite allocates a site of the given kind for the entry.
func (c *collector) entrySite(kind string, at ast.Node, en entryInfo) uint32 {
	return c.siteText(kind, at, en.text, slotTypeString(kind, en.elem))
}

// entryUse records a use of the entry e (kind "use", or "load" for a
// load into a local, argument or result) when e is one; it reports
// whether it is.
func (c *collector) entryUse(e ast.Expr, kind string) bool {
	en, ok := c.entry(e)
	if !ok {
		return false
	}
	ix := ast.Unparen(e).(*ast.IndexExpr)
	if !c.ed.has(ix, actEntryUse) {
		c.ed.add(ix, action{kind: actEntryUse, site: c.entrySite(kind, ix, en), ptr: c.pure(ix.X), lhs: ix.X})
	}
	return true
}

// entryDeref records a use of the entry e when its value is dereferenced
// in a way a nil value of the element's kind makes panic (or writes it,
// for a map): kinds lists the reference kinds that count.
func (c *collector) entryDeref(e ast.Expr, kinds ...string) {
	en, ok := c.entry(e)
	if !ok {
		return
	}
	k := refKind(en.elem)
	for _, want := range kinds {
		if k == want {
			c.entryUse(e, "use")
			return
		}
	}
}

// entryStore records the store of rhs into the entry lhs of lhs = rhs;
// it reports whether lhs is a map entry (stored, or left alone with a
// note).
func (c *collector) entryStore(lhs, rhs ast.Expr) bool {
	en, ok := c.entry(lhs)
	if !ok {
		return false
	}
	if !c.pure(en.m) || !c.pure(en.k) {
		c.note(lhs, "store into the map entry %s left alone: the map or key expression has effects", en.text)
		return true
	}
	if c.implicitInstance(rhs) {
		c.note(lhs, "store into the map entry %s left alone: the value is a generic function instantiated by the assignment", en.text)
		return true
	}
	op := c.staticOp(rhs, en.elem)
	id := c.entrySite(siteKind(op), lhs, en)
	c.ed.add(rhs, action{kind: actEntryStore, site: id, op: op, lhs: ast.Unparen(lhs)})
	return true
}

// entryDelete records delete(m, k) of a map entry as its dispose.
func (c *collector) entryDelete(n *ast.CallExpr, parent ast.Node) {
	if len(n.Args) != 2 {
		return
	}
	en, ok := c.entryOf(n.Args[0], n.Args[1], n)
	if !ok {
		return
	}
	if _, isGo := parent.(*ast.GoStmt); isGo {
		return // the go statement's note says so
	}
	c.ed.add(n, action{kind: actEntryDelete, site: c.entrySite("delete", n, en), lhs: n.Args[0], key: n.Args[1], pos: n.Pos()})
}

// syncMapMethods maps the methods of sync.Map wafl instruments to their
// helper and site kind; Load is decided by its context (syncMapLoad).
var syncMapMethods = map[string]struct{ helper, kind string }{
	"Store":            {hSyncStore, "store"},
	"LoadOrStore":      {hSyncLoadStore, "store"},
	"Swap":             {hSyncSwap, "store"},
	"CompareAndSwap":   {hSyncCAS, "store"},
	"Delete":           {hSyncDelete, "delete"},
	"LoadAndDelete":    {hSyncLoadDel, "delete"},
	"CompareAndDelete": {hSyncCAD, "delete"},
}

// syncMap reports whether fsel selects a method of a sync.Map (a pointer
// to one, or an addressable shared one; not embedded) and returns whether
// the receiver is the pointer.
func (c *collector) syncMap(fsel *ast.SelectorExpr, sel *types.Selection) (isPtr, ok bool) {
	if len(sel.Index()) != 1 {
		return false, false
	}
	t := typeOf(c.info, fsel.X)
	if t == nil {
		return false, false
	}
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t, isPtr = types.Unalias(p.Elem()), true
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != "sync" || n.Obj().Name() != "Map" {
		return false, false
	}
	if !isPtr && (!c.info.Types[fsel.X].Addressable() || !c.sharedRoot(fsel.X)) {
		return false, false
	}
	return isPtr, true
}

// syncMapText is the site table's expression of the entry of key k of the
// sync.Map recv: "recv[k]".
func (c *collector) syncMapText(recv, k ast.Expr) string {
	return exprString(c.fset, recv) + "[" + exprString(c.fset, k) + "]"
}

// syncMapCall records a store or a delete on a sync.Map entry: the call
// becomes the helper (syncMapMethods). Reports whether n is such a call.
func (c *collector) syncMapCall(n *ast.CallExpr, fsel *ast.SelectorExpr, sel *types.Selection, parent ast.Node) bool {
	m, ok := syncMapMethods[fsel.Sel.Name]
	if !ok || len(n.Args) == 0 || n.Ellipsis.IsValid() {
		return false
	}
	isPtr, ok := c.syncMap(fsel, sel)
	if !ok {
		return false
	}
	text := c.syncMapText(fsel.X, n.Args[0])
	if _, isGo := parent.(*ast.GoStmt); isGo {
		c.note(n, "go statement of %s on the sync.Map entry %s left alone", fsel.Sel.Name, text)
		return true
	}
	kind := m.kind
	if kind == "store" && len(n.Args) >= 2 {
		v := n.Args[len(n.Args)-1]
		if c.info.Types[v].IsNil() {
			kind = "dispose"
		} else if tv := c.info.Types[v]; tv.Type != nil && !types.IsInterface(tv.Type) && refKind(tv.Type) == "" {
			kind = "init" // a value that is not a pointer: never nil
		}
	}
	id := c.siteText(kind, n, text, "")
	c.ed.add(n, action{kind: actSyncMap, site: id, ptr: isPtr, op: m.helper})
	return true
}

// syncMapLoad records v, ok := E.Load(k) on a sync.Map (also =, var):
// a check when ok is kept, in a function that closes a channel or
// disposes of a map entry; a use when ok is dropped and v reaches a
// dereference. lhs are the two left sides (nil for var), names the
// declared names.
func (c *collector) syncMapLoad(lhs []ast.Expr, names []*ast.Ident, rhs []ast.Expr, at ast.Node) {
	if len(rhs) != 1 || len(lhs)+len(names) != 2 {
		return
	}
	call, ok := ast.Unparen(rhs[0]).(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return
	}
	fsel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || fsel.Sel.Name != "Load" {
		return
	}
	sel := c.info.Selections[fsel]
	if sel == nil || sel.Kind() != types.MethodVal {
		return
	}
	isPtr, ok := c.syncMap(fsel, sel)
	if !ok || c.ed.has(call, actSyncMap) {
		return
	}
	var v, okExpr ast.Expr
	if names != nil {
		v, okExpr = names[0], names[1]
	} else {
		v, okExpr = lhs[0], lhs[1]
	}
	text := c.syncMapText(fsel.X, call.Args[0])
	if !isBlankIdent(okExpr) {
		if c.inDisposer(at) {
			c.ed.add(call, action{kind: actSyncMap, site: c.siteText("check", call, text, ""), ptr: isPtr, op: hSyncCheck})
		}
		return
	}
	if c.flow == nil || isBlankIdent(v) {
		return
	}
	var node *types.Var
	if id, ok := v.(*ast.Ident); ok && names != nil {
		node, _ = c.info.Defs[id].(*types.Var)
	} else {
		node = c.flow.localVar(v)
	}
	if node == nil {
		return
	}
	reached, lines := c.flow.reaches(node)
	if !reached {
		return
	}
	c.derefs = lines
	id := c.siteText("load", call, text, "")
	c.derefs = nil
	c.ed.add(call, action{kind: actSyncMap, site: id, ptr: isPtr, op: hSyncLoad})
}

// inDisposer reports whether n lies in a top-level function that closes
// a channel or disposes of a map entry (delete, a nil store into an
// entry, a sync.Map delete): where a comma-ok lookup is the check of a
// check-then-act.
func (c *collector) inDisposer(n ast.Node) bool {
	if c.inCloser(n, c.file) {
		return true
	}
	for _, b := range c.chk.disposers {
		if b.Pos() <= n.Pos() && n.End() <= b.End() {
			return true
		}
	}
	return false
}

// entryDisposes reports whether the function body disposes of a map
// entry: delete(m, k), m[k] = nil, or a delete method of a sync.Map.
func (c *collector) entryDisposes(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.CallExpr:
			switch f := ast.Unparen(x.Fun).(type) {
			case *ast.Ident:
				if b, ok := c.info.Uses[f].(*types.Builtin); ok && b.Name() == "delete" {
					found = true
				}
			case *ast.SelectorExpr:
				if sel := c.info.Selections[f]; sel != nil && sel.Kind() == types.MethodVal {
					if m, ok := syncMapMethods[f.Sel.Name]; ok && m.kind == "delete" {
						if _, ok := c.syncMap(f, sel); ok {
							found = true
						}
					}
				}
			}
		case *ast.AssignStmt:
			for i, l := range x.Lhs {
				if ix, ok := ast.Unparen(l).(*ast.IndexExpr); ok && i < len(x.Rhs) && len(x.Lhs) == len(x.Rhs) {
					if _, isMap := under(typeOf(c.info, ix.X)).(*types.Map); isMap && c.info.Types[x.Rhs[i]].IsNil() {
						found = true
					}
				}
			}
		}
		return !found
	})
	return found
}

// editEntry carries out a map entry action on n.
func (ap *applier) editEntry(act action, n dst.Node) dst.Node {
	switch act.kind {
	case actEntryUse:
		ix := n.(*dst.IndexExpr)
		if m, ok := ap.clones[act.lhs]; ok && act.ptr {
			// m[_waflEntryKey(id, m, k)]: the map evaluated twice (pure),
			// the key once; the helper stays within the inlining budget.
			ix.Index = call(hEntryKey, siteLit(act.site), cleanClone(m), ix.Index)
			return ix
		}
		out := call(hEntryUse, siteLit(act.site), ix.X, ix.Index)
		out.Decs.NodeDecs = ix.Decs.NodeDecs
		return out
	case actEntryStore:
		ix, ok := ap.clones[act.lhs].(*dst.IndexExpr)
		if !ok {
			return n
		}
		m, k := cleanClone(ix.X), cleanClone(ix.Index)
		switch act.op {
		case "dispose":
			return call(hEntryNil, siteLit(act.site), m, k)
		case "init":
			return call(hEntryInit, siteLit(act.site), n.(dst.Expr), m, k)
		}
		return call(hEntryStore, siteLit(act.site), n.(dst.Expr), m, k)
	case actEntryDelete:
		ce := n.(*dst.CallExpr)
		if k := len(ap.owners) - 1; k >= 0 {
			if es, ok := ap.owners[k].(*dst.ExprStmt); ok && es.X == n {
				// A statement of its own: if _waflOn() { _waflEntryDeleted(id,
				// m, k) } before it, the map and key evaluated twice (pure),
				// and the delete itself left as it is, so that with the hooks
				// off it costs a load and a branch.
				m, key := ap.clones[act.lhs], ap.clones[act.key]
				rec := &dst.IfStmt{
					Cond: call(hOn),
					Body: &dst.BlockStmt{List: []dst.Stmt{&dst.ExprStmt{X: call(hEntryDeleted, siteLit(act.site), m, key)}}},
				}
				rec.Decs.Before, rec.Decs.After = dst.NewLine, dst.NewLine
				rec.Decs.Start.Append(marker(ap.fset, act.pos))
				ap.before[k] = append(ap.before[k], rec)
				return n
			}
		}
		// Deferred, or the post or init statement of a for, if or switch.
		out := call(hEntryDelete, siteLit(act.site), ce.Args[0], ce.Args[1])
		out.Decs = ce.Decs
		return out
	case actSyncMap:
		ce := n.(*dst.CallExpr)
		recv := unparen(ce.Fun).(*dst.SelectorExpr).X
		if !act.ptr {
			recv = addr(recv)
		}
		out := call(act.op, append([]dst.Expr{siteLit(act.site), recv}, ce.Args...)...)
		out.Decs = ce.Decs
		return out
	}
	return n
}

// commaOK reports whether e is the one right side of a two-valued
// assignment or declaration (v, ok := e).
func commaOK(e ast.Expr, parent ast.Node) bool {
	switch p := parent.(type) {
	case *ast.AssignStmt:
		return len(p.Rhs) == 1 && len(p.Lhs) == 2 && p.Rhs[0] == e
	case *ast.ValueSpec:
		return len(p.Values) == 1 && len(p.Names) == 2 && p.Values[0] == e
	}
	return false
}

// entryHoistable reports whether a's site is delayed before the lock that
// guards it (locks.go): every map entry access but a check, whose delay
// belongs after it.
func entryHoistable(a action) bool {
	switch a.kind {
	case actEntryUse, actEntryStore, actEntryDelete:
		return true
	case actSyncMap:
		return a.op != hSyncCheck
	}
	return false
}

// noteOnce is note, once per position.
func (c *collector) noteOnce(n ast.Node, format string, args ...any) {
	if c.noted == nil {
		c.noted = map[token.Pos]bool{}
	}
	if c.noted[n.Pos()] {
		return
	}
	c.noted[n.Pos()] = true
	c.note(n, format, args...)
}

// preEntries takes, top-down, a pristine copy of the map expression of a
// lookup rewritten as m[_waflEntryKey(id, m, k)], and of the map and key
// of a delete, before the hooks of their own subexpressions are added.
func (ap *applier) preEntries(n dst.Node) {
	if ce, ok := n.(*dst.CallExpr); ok {
		if a, ok := ap.nodes[n].(*ast.CallExpr); ok && ap.ed.has(a, actEntryDelete) {
			ap.clones[a.Args[0]] = cleanClone(ce.Args[0])
			ap.clones[a.Args[1]] = cleanClone(ce.Args[1])
		}
		return
	}
	ix, ok := n.(*dst.IndexExpr)
	if !ok {
		return
	}
	a, ok := ap.nodes[n].(*ast.IndexExpr)
	if !ok {
		return
	}
	for _, act := range ap.ed.acts[a] {
		if act.kind == actEntryUse && act.ptr {
			ap.clones[a.X] = cleanClone(ix.X)
		}
	}
}
