// Apply: carries out the edits collection decided (collect.go) on the
// file's dst tree, bottom-up with dstutil.Apply. Every hook becomes an
// inline call of a helper from the generated helper file (helpers.go); go
// statements get Fork/Adopt, os.Exit becomes the runtime's Exit, and a user
// TestMain is wrapped. Statements added here carry the position markers of
// the statement they replace (positions.go). No type information is needed:
// it is all in the actions.

package instrument

import (
	"go/ast"
	"go/token"
	"strconv"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
	"github.com/dave/dst/dstutil"
)

// Names of the helpers the rewritten code calls. They are declared in the
// helper file generated into every instrumented package (helpers.go), which
// imports the runtime under names user code cannot shadow.
const (
	hUse          = "_waflUse"
	hStore        = "_waflStore"
	hStoreAny     = "_waflStoreAny"
	hInit         = "_waflInit"
	hNil          = "_waflNil"
	hSend         = "_waflSend"
	hClose        = "_waflClose"
	hPtrStore     = "_waflPtrStore"
	hValueStore   = "_waflValueStore"
	hPtrSwap      = "_waflPtrSwap"
	hPtrCAS       = "_waflPtrCAS"
	hValueSwap    = "_waflValueSwap"
	hValueCAS     = "_waflValueCAS"
	hStorePointer = "_waflStorePointer"
	hSwapPointer  = "_waflSwapPointer"
	hCASPointer   = "_waflCASPointer"
	hWGAdd        = "_waflWGAdd"
	hCtx0         = "_waflCtx0"
	hCtxR         = "_waflCtxR"
	hCtxA         = "_waflCtxA"
	hCtxAR        = "_waflCtxAR"
	hCtxAB        = "_waflCtxAB"
	hCtxT         = "_waflCtxT"
	hCtxFork      = "_waflCtxFork"
	hCtxAdopt     = "_waflCtxAdopt"
	hCtxAdoptT    = "_waflCtxAdoptT"
	hWGDone       = "_waflWGDone"
	hWGWait       = "_waflWGWait"
	hWGGo         = "_waflWGGo"
	hGo           = "_waflGo"
	hAdopt        = "_waflAdopt"
	hToken        = "_waflToken"
	hExit         = "_waflExit"
	hFinish       = "_waflFinish"
	hTestsFork    = "_waflTestsFork"
	hTestsAdopt   = "_waflTestsAdopt"
	hOn           = "_waflOn"
	userMain      = "_waflTestMain"
	tokenVar      = "_wafl_t"
	subtestVar    = "_waflT"
)

// applier carries out one file's edits on its dst tree.
type applier struct {
	fset   *token.FileSet        // for the markers of added statements
	nodes  map[dst.Node]ast.Node // dst node -> the original it was decorated from
	ed     *edits
	clones map[ast.Expr]dst.Expr // pristine copies of stored-to slots, by original slot
	temp   int                   // number of the last _wafl_v temporary
	// before: per statement of a statement list being rewritten (the
	// innermost last), the statements to insert before it (ctxLit's token,
	// a delete's dispose); owners: those statements
	before [][]dst.Stmt
	owners []dst.Node
	tok    int // number of the last _wafl_tN token variable
}

// apply carries out ed on df, which dec decorated from the file ed was
// collected on.
func apply(fset *token.FileSet, dec *decorator.Decorator, df *dst.File, ed *edits) {
	ap := &applier{fset: fset, nodes: dec.Ast.Nodes, ed: ed, clones: map[ast.Expr]dst.Expr{}}
	dstutil.Apply(df, ap.pre, ap.post)
}

// pre takes pristine copies of the stored-to slots of an assignment before
// their own subexpressions are rewritten: in s.p.q = v with a use of s.p,
// the store hook takes &s.p.q, not &(*_waflUse(…, &s.p)).q.
func (ap *applier) pre(c *dstutil.Cursor) bool {
	if _, ok := c.Node().(dst.Stmt); ok && c.Index() >= 0 {
		ap.before = append(ap.before, nil)
		ap.owners = append(ap.owners, c.Node())
	}
	ap.preChecks(c.Node())
	ap.preEntries(c.Node())      // entries.go
	ap.preAtomicStates(c.Node()) // states.go
	s, ok := ap.nodes[c.Node()].(*ast.AssignStmt)
	if !ok {
		return true
	}
	ds := c.Node().(*dst.AssignStmt)
	tuple := ap.ed.has(s, actTuple)
	for i, l := range s.Lhs {
		if tuple || i < len(s.Rhs) && (ap.ed.has(s.Rhs[i], actStore) || ap.ed.has(s.Rhs[i], actEntryStore) || ap.ed.has(s.Rhs[i], actStateSet)) {
			ap.clones[l] = cleanClone(ds.Lhs[i])
		}
	}
	return true
}

// post replaces a node, whose children are already rewritten, by the
// result of its actions.
func (ap *applier) post(c *dstutil.Cursor) bool {
	if _, ok := c.Node().(dst.Stmt); ok && c.Index() >= 0 {
		k := len(ap.before) - 1
		for _, st := range ap.before[k] {
			c.InsertBefore(st)
		}
		ap.before, ap.owners = ap.before[:k], ap.owners[:k]
	}
	n := c.Node()
	a := ap.nodes[n]
	if a == nil {
		return true
	}
	acts := ap.ed.acts[a]
	if len(acts) == 0 {
		return true
	}
	// Actions that take the node's address go first, while it is still
	// addressable: a captured variable both loaded (a use) and stored
	// elsewhere (err = exportErr) becomes _waflStore(id, (*_waflUse(id2,
	// &exportErr)), &err), not the use of a call.
	for _, first := range []bool{true, false} {
		for _, act := range acts {
			if addressed(act.kind) == first {
				n = ap.edit(act, a, n)
			}
		}
	}
	c.Replace(n)
	return true
}

// addressed reports whether an action of kind k rewrites its node into an
// expression that takes the node's address.
func addressed(k actKind) bool {
	switch k {
	case actUse, actAtomicUse, actCheckFlag, actCheckAtomicBool, actCheckField:
		return true
	}
	return false
}

// edit returns the rewrite of n, decorated from a, by one action.
func (ap *applier) edit(act action, a ast.Node, n dst.Node) dst.Node {
	switch act.kind {
	case actUse:
		return paren(&dst.StarExpr{X: call(useHelper(act.op), siteLit(act.site), addr(n.(dst.Expr)))})
	case actSend:
		return call(hSend, siteLit(act.site), n.(dst.Expr))
	case actClose:
		return call(hClose, siteLit(act.site), n.(*dst.CallExpr).Args[0])
	case actAtomicUse:
		x := n.(dst.Expr)
		if !act.ptr {
			x = addr(x)
		}
		return call(hUse, siteLit(act.site), x)
	case actAtomicStore:
		return atomicStore(act, n.(*dst.CallExpr))
	case actCtx:
		if lit, ok := n.(*dst.FuncLit); ok && act.op == hCtxT && len(ap.before) > 0 {
			return ap.ctxLit(lit, a)
		}
		return call(act.op, n.(dst.Expr))
	case actWaitGroup:
		ce := n.(*dst.CallExpr)
		recv := unparen(ce.Fun).(*dst.SelectorExpr).X
		if !act.ptr {
			recv = addr(recv)
		}
		out := call(act.op, append([]dst.Expr{siteLit(act.site), recv}, ce.Args...)...)
		out.Decs = ce.Decs
		return out
	case actAtomicFunc:
		ce := n.(*dst.CallExpr)
		out := call(act.op, append([]dst.Expr{siteLit(act.site)}, ce.Args...)...)
		out.Decs = ce.Decs
		return out
	case actStore:
		return storeHook(act.op, act.site, n.(dst.Expr), ap.clones[act.lhs])
	case actExit:
		return dst.NewIdent(hExit)
	case actTuple:
		return ap.tuple(act, a.(*ast.AssignStmt), n.(*dst.AssignStmt))
	case actGo:
		return ap.goStmt(act, a.(*ast.GoStmt), n.(*dst.GoStmt))
	case actCheckChan, actCheckFlag, actCheckAtomicBool, actCheckLookup, actCheckField, actCheckState:
		return ap.editCheck(act, n)
	case actStateSet:
		return stateHook(act.site, n.(dst.Expr), ap.clones[act.lhs]) // states.go
	case actAtomicState:
		return ap.editAtomicState(act, n.(*dst.CallExpr)) // states.go
	case actHoist:
		return hoistRecv(act, n.(dst.Expr)) // locks.go
	case actEntryUse, actEntryStore, actEntryDelete, actSyncMap:
		return ap.editEntry(act, n) // entries.go
	}
	return n
}

// storeHook wraps the value v stored into slot:
// _waflNil(id, &slot) for a dispose (the helper returns nil), otherwise
// _waflInit/_waflStoreAny/_waflStore(id, v, &slot).
func storeHook(op string, site uint32, v, slot dst.Expr) dst.Expr {
	switch op {
	case "dispose":
		return call(hNil, siteLit(site), addr(slot))
	case "init":
		return call(hInit, siteLit(site), v, addr(slot))
	case "store-any":
		return call(hStoreAny, siteLit(site), v, addr(slot))
	}
	return call(hStore, siteLit(site), v, addr(slot))
}

// atomicStore rewrites E.Store(v) into _waflPtrStore/_waflValueStore(id, &E, v),
// E.Swap(v) and E.CompareAndSwap(o, v) likewise.
func atomicStore(act action, ce *dst.CallExpr) dst.Expr {
	recv := unparen(ce.Fun).(*dst.SelectorExpr).X
	if !act.ptr {
		recv = addr(recv)
	}
	h := map[string]string{
		"pointer.Store": hPtrStore, "pointer.Swap": hPtrSwap, "pointer.CompareAndSwap": hPtrCAS,
		"value.Store": hValueStore, "value.Swap": hValueSwap, "value.CompareAndSwap": hValueCAS,
	}[act.op+"."+act.method]
	out := call(h, append([]dst.Expr{siteLit(act.site), recv}, ce.Args...)...)
	out.Decs = ce.Decs
	return out
}

// newTemp returns the name of a fresh temporary.
func (ap *applier) newTemp() string {
	ap.temp++
	return "_wafl_v" + strconv.Itoa(ap.temp)
}

// tuple rewrites L1, L2 = f() into
// { _wafl_v1, _wafl_v2 := f(); L1, L2 = _waflStore(id, _wafl_v1, &L1), _wafl_v2 }.
func (ap *applier) tuple(act action, a *ast.AssignStmt, n *dst.AssignStmt) dst.Stmt {
	var temps []dst.Expr
	var rhs []dst.Expr
	for i := range n.Lhs {
		name := ap.newTemp()
		temps = append(temps, dst.NewIdent(name))
		var v dst.Expr = dst.NewIdent(name)
		if s, ok := act.slots[i]; ok {
			v = storeHook(s.op, s.site, v, ap.clones[a.Lhs[i]])
		}
		rhs = append(rhs, v)
	}
	def := &dst.AssignStmt{Lhs: temps, Tok: token.DEFINE, Rhs: n.Rhs}
	def.Decs.Before, def.Decs.After = dst.NewLine, dst.NewLine
	def.Decs.Start.Append(marker(ap.fset, a.Pos()))
	n.Rhs = rhs
	decs := n.Decs
	n.Decs = dst.AssignStmtDecorations{}
	n.Decs.Before, n.Decs.After = dst.NewLine, dst.NewLine
	return &dst.BlockStmt{
		List: []dst.Stmt{def, n},
		Decs: dst.BlockStmtDecorations{NodeDecs: decs.NodeDecs},
	}
}

// goStmt gives the new goroutine its parent's context.
//
//	go func(a A) { body }(x)  ->  go func(_wafl_t _waflToken, a A) { _waflAdopt(_wafl_t); body }(_waflGo(id), x)
//	go f(x, y)                ->  { _wafl_v1, _wafl_v2 := f, x ...; go func(_wafl_t _waflToken) { _waflAdopt(_wafl_t); _wafl_v1(_wafl_v2...) }(_waflGo(id)) }
//
// id is the go statement's site: the parent records a go row there.
func (ap *applier) goStmt(act action, a *ast.GoStmt, n *dst.GoStmt) dst.Stmt {
	tokField := &dst.Field{Names: []*dst.Ident{dst.NewIdent(tokenVar)}, Type: dst.NewIdent(hToken)}
	adopt := &dst.ExprStmt{X: call(hAdopt, dst.NewIdent(tokenVar))}
	if lit, ok := unparen(n.Call.Fun).(*dst.FuncLit); ok {
		params := lit.Type.Params
		for _, f := range params.List {
			if len(f.Names) == 0 {
				f.Names = []*dst.Ident{dst.NewIdent("_")}
			}
		}
		params.List = append([]*dst.Field{tokField}, params.List...)
		lit.Body.List = append([]dst.Stmt{adopt}, lit.Body.List...)
		n.Call.Args = append([]dst.Expr{call(hGo, siteLit(act.site))}, n.Call.Args...)
		return n
	}
	var names, vals []dst.Expr
	tmp := func(e dst.Expr) dst.Expr {
		name := ap.newTemp()
		names = append(names, dst.NewIdent(name))
		vals = append(vals, e)
		return dst.NewIdent(name)
	}
	fun := n.Call.Fun
	if act.copyFun {
		fun = tmp(fun)
	}
	var args []dst.Expr
	for i, arg := range n.Call.Args {
		if act.copyArgs[i] {
			arg = tmp(arg)
		}
		args = append(args, arg)
	}
	inner := &dst.CallExpr{Fun: fun, Args: args, Ellipsis: n.Call.Ellipsis}
	lit := &dst.FuncLit{
		Type: &dst.FuncType{Func: true, Params: &dst.FieldList{List: []*dst.Field{tokField}}},
		Body: &dst.BlockStmt{List: []dst.Stmt{adopt, &dst.ExprStmt{X: inner}}},
	}
	g := &dst.GoStmt{Call: &dst.CallExpr{Fun: lit, Args: []dst.Expr{call(hGo, siteLit(act.site))}}}
	if len(names) == 0 {
		g.Decs = n.Decs
		return g
	}
	temps := &dst.AssignStmt{Lhs: names, Tok: token.DEFINE, Rhs: vals}
	temps.Decs.Start.Append(marker(ap.fset, a.Pos()))
	temps.Decs.Before, temps.Decs.After = dst.NewLine, dst.NewLine
	g.Decs.Before, g.Decs.After = dst.NewLine, dst.NewLine
	g.Decs.Start.Append(marker(ap.fset, a.Pos()))
	return &dst.BlockStmt{
		List: []dst.Stmt{temps, g},
		Decs: dst.BlockStmtDecorations{NodeDecs: n.Decs.NodeDecs},
	}
}

// ctxLit carries the creation context of a function literal passed to
// t.Run (or b.Run) without a wrapper and without moving the literal: a
// wrapper would be one more frame of the test package between the testing
// package and the subtest function, and a literal inside another literal
// gets another name (TestX.func2 becomes TestX.func2.1), both of which
// tests that inspect their own stack or function names see. The token is
// taken in a statement before the one the literal is in:
//
//	_wafl_t1 := _waflCtxFork()
//	t.Run("name", func(t *testing.T) { _waflCtxAdopt(_wafl_t1); ... })
func (ap *applier) ctxLit(lit *dst.FuncLit, a ast.Node) dst.Expr {
	ap.tok++
	name := tokenVar + strconv.Itoa(ap.tok)
	adopt := &dst.ExprStmt{X: call(hCtxAdopt, dst.NewIdent(name))}
	if t := subtestParam(lit); t != "" {
		adopt.X = call(hCtxAdoptT, dst.NewIdent(name), dst.NewIdent(t))
	}
	lit.Body.List = append([]dst.Stmt{adopt}, lit.Body.List...)
	fork := &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(name)}, Tok: token.DEFINE, Rhs: []dst.Expr{call(hCtxFork)}}
	fork.Decs.Before, fork.Decs.After = dst.NewLine, dst.NewLine
	fork.Decs.Start.Append(marker(ap.fset, a.Pos()))
	k := len(ap.before) - 1
	ap.before[k] = append(ap.before[k], fork)
	return lit
}

// subtestParam returns the name of the one parameter of a subtest's
// function literal (its *testing.T), naming it first when it has none or
// is _; "" when the literal does not take exactly one.
func subtestParam(lit *dst.FuncLit) string {
	ps := lit.Type.Params
	if ps == nil || len(ps.List) != 1 || len(ps.List[0].Names) > 1 {
		return ""
	}
	f := ps.List[0]
	if len(f.Names) == 0 || f.Names[0].Name == "_" {
		f.Names = []*dst.Ident{dst.NewIdent(subtestVar)}
	}
	return f.Names[0].Name
}

// wrapTestMain renames a user TestMain and adds
// func TestMain(m *testing.M) { _waflTestMain(m); _waflFinish() }.
func wrapTestMain(df *dst.File) bool {
	for _, d := range df.Decls {
		fd, ok := d.(*dst.FuncDecl)
		if !ok || fd.Recv != nil || fd.Name.Name != "TestMain" || fd.Body == nil {
			continue
		}
		if len(fd.Type.Params.List) != 1 || fd.Type.TypeParams != nil {
			continue
		}
		fd.Name.Name = userMain
		ptype := cleanClone(fd.Type.Params.List[0].Type)
		wrapper := &dst.FuncDecl{
			Name: dst.NewIdent("TestMain"),
			Type: &dst.FuncType{Func: true, Params: &dst.FieldList{List: []*dst.Field{{Names: []*dst.Ident{dst.NewIdent("m")}, Type: ptype}}}},
			Body: &dst.BlockStmt{List: []dst.Stmt{
				&dst.ExprStmt{X: call(hTestsFork)},
				&dst.ExprStmt{X: call(userMain, dst.NewIdent("m"))},
				&dst.ExprStmt{X: call(hFinish)},
			}},
		}
		wrapper.Decs.Before = dst.EmptyLine
		wrapper.Decs.Start.Append("// TestMain is wafl's wrapper: the user's TestMain, then the runtime's Finish.")
		df.Decls = append(df.Decls, wrapper)
		return true
	}
	return false
}

// adoptInTests makes every Test function of df start with
// _waflTestsAdopt(), so that the test's goroutine is a child of the main
// goroutine at TestMain (hook.ForkTests): package initialization happens
// before the test. Reports whether it added any.
func adoptInTests(df *dst.File) bool {
	added := false
	for _, d := range df.Decls {
		fd, ok := d.(*dst.FuncDecl)
		if !ok || fd.Recv != nil || fd.Body == nil || fd.Name.Name == "TestMain" || !IsTestName(fd.Name.Name) || fd.Type.TypeParams != nil {
			continue
		}
		if fd.Type.Params == nil || len(fd.Type.Params.List) != 1 {
			continue
		}
		st := &dst.ExprStmt{X: call(hTestsAdopt)}
		fd.Body.List = append([]dst.Stmt{st}, fd.Body.List...)
		added = true
	}
	return added
}

// hasTestMain reports whether the file declares func TestMain.
func hasTestMain(f *ast.File) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" {
			return true
		}
	}
	return false
}

// blankUse is `var _ = os.Exit` (under the file's import name of os),
// which keeps the import used once its Exit calls are replaced.
func blankUse(osName string) dst.Decl {
	var val dst.Expr = dst.NewIdent("Exit")
	if osName != "Exit" {
		val = &dst.SelectorExpr{X: dst.NewIdent(osName), Sel: dst.NewIdent("Exit")}
	}
	d := &dst.GenDecl{Tok: token.VAR, Specs: []dst.Spec{&dst.ValueSpec{
		Names:  []*dst.Ident{dst.NewIdent("_")},
		Values: []dst.Expr{val},
	}}}
	d.Decs.Before = dst.EmptyLine
	d.Decs.Start.Append("// wafl replaced os.Exit with its own Exit; keep the import used.")
	return d
}

// blankAtomicUse is `var _ = atomic.F` for the import name of sync/atomic
// whose pointer functions (F one of them) were replaced by helpers: when
// they were the file's only use of the import, it would be unused
// (hashicorp/go-memdb's txn.go did not build instrumented).
func blankAtomicUse(name, fn string) dst.Decl {
	d := &dst.GenDecl{Tok: token.VAR, Specs: []dst.Spec{&dst.ValueSpec{
		Names:  []*dst.Ident{dst.NewIdent("_")},
		Values: []dst.Expr{&dst.SelectorExpr{X: dst.NewIdent(name), Sel: dst.NewIdent(fn)}},
	}}}
	d.Decs.Before = dst.EmptyLine
	d.Decs.Start.Append("// wafl replaced sync/atomic's pointer functions with its own; keep the import used.")
	return d
}

// ---- dst construction helpers ----

func call(name string, args ...dst.Expr) *dst.CallExpr {
	return &dst.CallExpr{Fun: dst.NewIdent(name), Args: args}
}

func siteLit(id uint32) dst.Expr {
	return &dst.BasicLit{Kind: token.INT, Value: strconv.FormatUint(uint64(id), 10)}
}

func addr(x dst.Expr) dst.Expr {
	return &dst.UnaryExpr{Op: token.AND, X: x}
}

func paren(x dst.Expr) dst.Expr {
	return &dst.ParenExpr{X: x}
}

func unparen(e dst.Expr) dst.Expr {
	for {
		p, ok := e.(*dst.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// cleanClone copies e without its surrounding comments and spacing.
func cleanClone(e dst.Expr) dst.Expr {
	c := dst.Clone(e).(dst.Expr)
	d := c.Decorations()
	d.Before, d.After = dst.None, dst.None
	d.Start, d.End = nil, nil
	return c
}
