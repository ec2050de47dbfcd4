// Collection: walks the type-checked go/ast of one file in source order and
// decides what to rewrite. It numbers the sites (SiteAlloc, siteid.go), records an
// action on each original node to change, with every decision that needs
// type information already taken, and notes the constructs it leaves alone
// on purpose. It never touches the dst tree; apply.go does.

package instrument

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/memorder/wafl/instrument/sites"
)

// collector decides what to rewrite in one file.
type collector struct {
	fset   *token.FileSet
	info   *types.Info
	shared map[*types.Var]bool // locals another goroutine can reach (escape.go)
	flow   *flow               // which loads reach a dereference (loads.go)
	alloc  *SiteAlloc
	decl   *types.Func    // the declared function being walked (nil in a package-level declaration)
	pkg    *types.Package // the package of the file
	derefs []token.Pos    // dereferences reached by the load whose site is made next (loads.go)
	funcs  []string       // enclosing function names, innermost last
	litSeq map[string]int // function literals so far, per top-level function
	ed     *edits
	file   *ast.File
	chk    *checkState     // check sites (checks.go), made on first use
	states map[string]bool // the walked function's state fields (states.go)
	// atomicFields are the file's atomic state fields (states.go), made
	// on first use.
	atomicFields map[*types.Var]bool
	fresh        map[*types.Var]bool // locals holding maps made on the spot (entries.go), made on first use
	noted        map[token.Pos]bool  // positions noted once (entries.go)
}

// collect returns the edits for file. Function bodies are walked in source
// order, so that site ids follow the text. Package-level initializers run
// before any goroutine exists; only function literals in them are walked.
func collect(fset *token.FileSet, info *types.Info, shared map[*types.Var]bool, fl *flow, alloc *SiteAlloc, file *ast.File) *edits {
	var pkg *types.Package
	if fl != nil {
		pkg = fl.pkg
	}
	c := &collector{
		fset: fset, info: info, shared: shared, flow: fl, alloc: alloc, pkg: pkg,
		litSeq: map[string]int{},
		ed:     &edits{acts: map[ast.Node][]action{}, exitUse: map[string]bool{}, atomicUse: map[string]string{}},
		file:   file,
	}
	for _, d := range file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				continue
			}
			c.funcs = append(c.funcs, declName(d))
			c.decl, _ = info.Defs[d.Name].(*types.Func)
			c.states = c.stateFields(d.Body) // states.go
			c.walk(d.Body)
			c.funcs = c.funcs[:0]
			c.decl, c.states = nil, nil
		case *ast.GenDecl:
			ast.Inspect(d, func(n ast.Node) bool {
				if lit, ok := n.(*ast.FuncLit); ok {
					c.funcs = append(c.funcs, "init")
					c.walk(lit)
					c.funcs = c.funcs[:0]
					return false
				}
				return true
			})
		}
	}
	return c.ed
}

// walk visits the nodes under root in source order, keeping the stack of
// parents and the enclosing function names.
func (c *collector) walk(root ast.Node) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			if lit, ok := stack[len(stack)-1].(*ast.FuncLit); ok && lit != root {
				c.funcs = c.funcs[:len(c.funcs)-1]
			}
			stack = stack[:len(stack)-1]
			return true
		}
		if c.isConstant(n) {
			return false // no f(nil) follows: nothing was pushed
		}
		var parent ast.Node
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		if lit, ok := n.(*ast.FuncLit); ok && lit != root {
			c.enterFuncLit()
		}
		c.visit(n, parent)
		return true
	})
}

// isConstant reports whether n is a constant expression (len(*p) of a
// pointer to an array, say): the compiler evaluates it, no access happens at
// run time, and a hook would make it non-constant.
func (c *collector) isConstant(n ast.Node) bool {
	e, ok := n.(ast.Expr)
	if !ok {
		return false
	}
	tv, ok := c.info.Types[e]
	return ok && tv.Value != nil
}

// enterFuncLit names a function literal after its top-level function:
// f.func1, f.func2, … in source order.
func (c *collector) enterFuncLit() {
	outer := c.funcs[0]
	c.litSeq[outer]++
	c.funcs = append(c.funcs, fmt.Sprintf("%s.func%d", outer, c.litSeq[outer]))
}

// visit records the actions for node n, whose parent is parent (nil at the
// root).
func (c *collector) visit(n, parent ast.Node) {
	switch n := n.(type) {
	case *ast.AssignStmt:
		c.assign(n, parent)
		c.checkLookup(len(n.Lhs), n.Rhs, n) // checks.go
		c.stateSet(n, parent)               // states.go
		if n.Tok == token.DEFINE || n.Tok == token.ASSIGN {
			c.loadAssign(n.Lhs, nil, n.Rhs)
			c.syncMapLoad(n.Lhs, nil, n.Rhs, n) // entries.go
		}
	case *ast.ValueSpec:
		c.loadAssign(nil, n.Names, n.Values)
		c.checkLookup(len(n.Names), n.Values, n) // checks.go
		c.syncMapLoad(nil, n.Names, n.Values, n)
	case *ast.ReturnStmt:
		c.loadReturn(n)
	case *ast.RangeStmt:
		c.rangeLoad(n) // loads.go
	case *ast.IncDecStmt:
		c.mapWrite(n.X)
	case *ast.TypeAssertExpr:
		if n.Type != nil && !commaOK(n, parent) {
			c.entryDeref(n.X, "interface") // m[k].(T) of a nil interface panics (entries.go)
		}
	case *ast.SelectorExpr:
		c.selector(n)
	case *ast.StarExpr:
		if c.slot(n.X) && refKind(typeOf(c.info, n.X)) == "pointer" {
			c.use(n.X)
		} else {
			c.entryDeref(n.X, "pointer") // entries.go
		}
	case *ast.IndexExpr:
		c.arrayIndex(n)
	case *ast.CallExpr:
		c.call(n, parent)
		c.atomicState(n, parent) // states.go
	case *ast.SendStmt:
		// No use of a map entry m[k] <- v: a deleted or not yet stored
		// entry is a nil channel, on which the send blocks (a select case
		// is never chosen) instead of panicking, so a delay before the
		// lookup exposes nothing. The send's own site, after the lookup,
		// is where a delay lets the close come first (entries.go).
		id := c.site("send", n, n.Chan)
		c.ed.add(n.Chan, action{kind: actSend, site: id})
	case *ast.GoStmt:
		c.goStmt(n)
	case *ast.SelectStmt:
		c.checkSelect(n)
	case *ast.IfStmt:
		c.checkIf(n, c.file)
	case *ast.BinaryExpr:
		c.checkState(n) // states.go
	case *ast.Ident:
		c.osExit(n, parent)
	}
}

// site allocates the id of a site of the given kind at n, whose slot (or
// channel, or atomic) is expr.
func (c *collector) site(kind string, n ast.Node, expr ast.Expr) uint32 {
	return c.siteText(kind, n, exprString(c.fset, expr), slotTypeString(kind, typeOf(c.info, expr)))
}

// siteText is site with the expression's text and its slot type given (a
// map entry's "m[k]" and its element type, entries.go).
func (c *collector) siteText(kind string, n ast.Node, expr, typ string) uint32 {
	pos := c.fset.Position(n.Pos())
	c.ed.numSites++
	s := sites.Site{
		Kind: kind,
		File: pos.Filename,
		Line: pos.Line,
		Col:  pos.Column,
		Expr: expr,
		Func: c.funcName(),
		Type: typ,
	}
	s.Derefs = derefLines(c.fset, s, c.derefs)
	return c.alloc.add(s)
}

// note records why a construct at n is left alone.
func (c *collector) note(n ast.Node, format string, args ...any) {
	c.ed.notes = append(c.ed.notes, fmt.Sprintf("%s: %s", c.fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
}

func (c *collector) funcName() string {
	if len(c.funcs) == 0 {
		return ""
	}
	return c.funcs[len(c.funcs)-1]
}

// declName is the site table name of a function or method: f, (T).m,
// (*T).m.
func declName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	name := "?"
	if id, ok := t.(*ast.Ident); ok {
		name = id.Name
	}
	return "(" + star + name + ")." + d.Name.Name
}

func exprString(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	if err := formatNode(&b, fset, e); err != nil {
		return "?"
	}
	return b.String()
}

// use records a use of the slot x (once per node).
func (c *collector) use(x ast.Expr) {
	if c.ed.has(x, actUse) {
		return
	}
	id := c.site("use", x, x)
	c.ed.add(x, action{kind: actUse, site: id, op: nilOp(typeOf(c.info, x))}) // derefs.go
}

// selector: x.f.g and x.f.M() use the slot x.f when it holds a pointer
// (field or method) or an interface (method); p.Load().g uses an atomic.
func (c *collector) selector(n *ast.SelectorExpr) {
	sel := c.info.Selections[n]
	if sel == nil {
		return
	}
	if c.slot(n.X) {
		switch refKind(typeOf(c.info, n.X)) {
		case "pointer", "interface":
			c.use(n.X)
			c.nilSafeMethod(n) // derefs.go
			return
		}
	}
	c.entryDeref(n.X, "pointer", "interface") // entries.go
	c.atomicLoadUse(n.X)
	c.loadRecv(n) // loads.go
}

// arrayIndex: x.arr[i] uses the slot x.arr when it holds a pointer to an
// array.
func (c *collector) arrayIndex(n *ast.IndexExpr) {
	if !c.slot(n.X) {
		if en, ok := c.entry(n.X); ok {
			if p, ok := under(en.elem).(*types.Pointer); ok {
				if _, ok := under(p.Elem()).(*types.Array); ok {
					c.entryUse(n.X, "use")
				}
			}
		}
		return
	}
	if p, ok := under(typeOf(c.info, n.X)).(*types.Pointer); ok {
		if _, ok := under(p.Elem()).(*types.Array); ok {
			c.use(n.X)
		}
	}
}

// atomicLoadUse records a use when e is p.Load() (atomic.Pointer) or
// v.Load().(T) (atomic.Value) and the result is dereferenced.
func (c *collector) atomicLoadUse(e ast.Expr) {
	c.atomicLoad(e)
}

// atomicLoad records a use of the atomic when e is p.Load() (atomic.Pointer)
// or v.Load().(T) (atomic.Value), and returns its site (0 if e is not one
// or it already has one).
func (c *collector) atomicLoad(e ast.Expr) uint32 {
	e = ast.Unparen(e)
	want := "pointer"
	if ta, ok := e.(*ast.TypeAssertExpr); ok {
		e, want = ast.Unparen(ta.X), "value"
	}
	call, ok := e.(*ast.CallExpr)
	if ok && len(call.Args) == 1 && c.info.Types[call.Fun].IsType() {
		return c.loadPointer(call.Args[0]) // (*T)(atomic.LoadPointer(a))
	}
	if !ok || len(call.Args) != 0 {
		return 0
	}
	fsel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || fsel.Sel.Name != "Load" {
		return 0
	}
	kind, isPtr := atomicKind(typeOf(c.info, fsel.X))
	if kind != want {
		return 0
	}
	if !isPtr && !c.info.Types[fsel.X].Addressable() {
		return 0
	}
	if c.ed.has(fsel.X, actAtomicUse) {
		return 0
	}
	id := c.site("atomic-load", fsel, fsel.X)
	c.ed.add(fsel.X, action{kind: actAtomicUse, site: id, ptr: isPtr})
	return id
}

// loadPointer records a use of *a when e is atomic.LoadPointer(a).
func (c *collector) loadPointer(e ast.Expr) uint32 {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return 0
	}
	fsel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return 0
	}
	fn, ok := c.info.Uses[fsel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "sync/atomic" || fn.Name() != "LoadPointer" {
		return 0
	}
	if c.ed.has(call.Args[0], actAtomicUse) {
		return 0
	}
	id := c.site("atomic-load", call, call.Args[0])
	c.ed.add(call.Args[0], action{kind: actAtomicUse, site: id, ptr: true})
	return id
}

// call: close(ch) disposes of the channel and uses its slot, x.fn() uses
// the func-typed slot, p.Store(v) on an atomic.Pointer or atomic.Value
// stores.
func (c *collector) call(n *ast.CallExpr, parent ast.Node) {
	c.loadArgs(n)
	c.funcArgs(n)
	fun := ast.Unparen(n.Fun)
	if id, ok := fun.(*ast.Ident); ok {
		if b, ok := c.info.Uses[id].(*types.Builtin); ok {
			if b.Name() == "close" && len(n.Args) == 1 && isChanType(typeOf(c.info, n.Args[0])) {
				site := c.site("close", n, n.Args[0])
				c.ed.add(n, action{kind: actClose, site: site})
				if c.slot(n.Args[0]) {
					c.use(n.Args[0])
				} else {
					c.entryDeref(n.Args[0], "chan")
				}
			}
			if b.Name() == "delete" {
				c.entryDelete(n, parent) // entries.go
			}
			return
		}
	}
	if c.info.Types[n.Fun].IsValue() && c.slot(n.Fun) && refKind(typeOf(c.info, n.Fun)) == "func" {
		c.use(n.Fun)
		return
	}
	if en, ok := c.entry(n.Fun); ok && c.info.Types[n.Fun].IsValue() && refKind(en.elem) == "func" {
		c.entryUse(n.Fun, "use")
		return
	}
	fsel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	if g, ok := parent.(*ast.GoStmt); ok && g.Call == n {
		return // go wg.Done(), go p.Store(v): the go statement gets Fork/Adopt instead
	}
	if sel := c.info.Selections[fsel]; sel != nil && sel.Kind() == types.MethodVal {
		if c.waitGroup(n, fsel, sel) || c.syncMapCall(n, fsel, sel, parent) {
			return
		}
		want := map[string]int{"Store": 1, "Swap": 1, "CompareAndSwap": 2}
		if nargs, ok := want[fsel.Sel.Name]; ok && len(n.Args) == nargs {
			kind, isPtr := atomicKind(typeOf(c.info, fsel.X))
			if kind != "" && (isPtr || c.info.Types[fsel.X].Addressable()) {
				id := c.site(atomicSiteKind(fsel.Sel.Name), n, fsel.X)
				c.ed.add(n, action{kind: actAtomicStore, site: id, ptr: isPtr, op: kind, method: fsel.Sel.Name})
			}
		}
		return
	}
	c.atomicPointerFunc(n, fsel)
}

// waitGroup records wg.Add(n), wg.Done(), wg.Wait() and wg.Go(f) on a
// sync.WaitGroup (or a pointer to one, not an embedded one): Add of a
// positive delta is an init of the WaitGroup, Done (and Add of a negative
// delta) and Wait are uses, so that a delay before Add lets a Done or a
// Wait run first (docs/instrumentation.md, "WaitGroups").
func (c *collector) waitGroup(n *ast.CallExpr, fsel *ast.SelectorExpr, sel *types.Selection) bool {
	if len(sel.Index()) != 1 || !isWaitGroup(typeOf(c.info, fsel.X)) {
		return false
	}
	h, ok := map[string]string{"Add": hWGAdd, "Done": hWGDone, "Wait": hWGWait, "Go": hWGGo}[fsel.Sel.Name]
	if !ok {
		return false
	}
	_, isPtr := under(typeOf(c.info, fsel.X)).(*types.Pointer)
	if !isPtr && !c.info.Types[fsel.X].Addressable() {
		return false
	}
	id := c.site("wg-"+strings.ToLower(fsel.Sel.Name), n, fsel.X)
	c.ed.add(n, action{kind: actWaitGroup, site: id, ptr: isPtr, op: h})
	return true
}

// isWaitGroup reports whether t is sync.WaitGroup or a pointer to it.
func isWaitGroup(t types.Type) bool {
	if t == nil {
		return false
	}
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "sync" && n.Obj().Name() == "WaitGroup"
}

// atomicSiteKind is the site kind of an atomic method or function that
// stores: "atomic-store", "atomic-swap", "atomic-cas".
func atomicSiteKind(name string) string {
	switch {
	case strings.HasPrefix(name, "Swap"):
		return "atomic-swap"
	case strings.HasPrefix(name, "CompareAndSwap"):
		return "atomic-cas"
	}
	return "atomic-store"
}

// atomicPointerFuncs are the sync/atomic functions on *unsafe.Pointer that
// store, with their helpers (helpers.go).
var atomicPointerFuncs = map[string]string{
	"StorePointer":          hStorePointer,
	"SwapPointer":           hSwapPointer,
	"CompareAndSwapPointer": hCASPointer,
}

// atomicPointerFunc records atomic.StorePointer/SwapPointer/
// CompareAndSwapPointer(addr, …): the store of the new value into *addr,
// nil a dispose, non-nil an init.
func (c *collector) atomicPointerFunc(n *ast.CallExpr, fsel *ast.SelectorExpr) {
	fn, ok := c.info.Uses[fsel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "sync/atomic" {
		return
	}
	h, ok := atomicPointerFuncs[fn.Name()]
	if !ok || len(n.Args) < 2 {
		return
	}
	id := c.site(atomicSiteKind(fn.Name()), n, n.Args[0])
	c.ed.add(n, action{kind: actAtomicFunc, site: id, op: h})
	if x, ok := fsel.X.(*ast.Ident); ok {
		if _, ok := c.info.Uses[x].(*types.PkgName); ok {
			c.ed.atomicUse[x.Name] = fn.Name()
		}
	}
}

// osExit records the replacement of os.Exit (qualified, or dot-imported)
// by the runtime's Exit; id is the identifier Exit, parent its parent.
func (c *collector) osExit(id *ast.Ident, parent ast.Node) {
	fn, ok := c.info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "os" || fn.Name() != "Exit" {
		return
	}
	sel, ok := parent.(*ast.SelectorExpr)
	if !ok || sel.Sel != id {
		c.ed.exitUse[id.Name] = true // dot import
		c.ed.add(id, action{kind: actExit})
		return
	}
	if x, ok := sel.X.(*ast.Ident); ok {
		c.ed.exitUse[x.Name] = true
		c.ed.add(sel, action{kind: actExit})
	}
}

// mapWrite records a use of the map slot m in m[k] = v, m[k] op= v, m[k]++.
func (c *collector) mapWrite(lhs ast.Expr) {
	ix, ok := ast.Unparen(lhs).(*ast.IndexExpr)
	if !ok {
		return
	}
	if _, ok := under(typeOf(c.info, ix.X)).(*types.Map); ok && c.slot(ix.X) {
		c.use(ix.X)
		return
	}
	c.entryDeref(ix.X, "map") // m[k][j] = v on a map of maps
}

// assign: map writes on the left, and stores into slots. A store in a
// select case is left alone (its right side must stay a receive); a store
// is a pairwise one (L1, L2 = R1, R2) or a tuple one (L1, L2 = f()).
func (c *collector) assign(n *ast.AssignStmt, parent ast.Node) {
	for _, l := range n.Lhs {
		c.mapWrite(l)
	}
	if n.Tok != token.ASSIGN {
		return
	}
	if cc, ok := parent.(*ast.CommClause); ok && cc.Comm == n {
		for _, l := range n.Lhs {
			if _, isEntry := c.entry(l); c.slot(l) || isEntry {
				c.note(l, "store into %s in a select case left alone", exprString(c.fset, l))
			}
		}
		return
	}
	if len(n.Lhs) == len(n.Rhs) {
		c.pairStores(n)
		return
	}
	if len(n.Rhs) == 1 {
		c.tupleStore(n, parent)
	}
}

// pairStores records the store of each R into L in L1, L2 = R1, R2: the
// hook wraps R, and the slot is evaluated a second time in &L, so L must be
// pure.
func (c *collector) pairStores(n *ast.AssignStmt) {
	for i, l := range n.Lhs {
		if c.entryStore(l, n.Rhs[i]) { // entries.go
			continue
		}
		if !c.slot(l) {
			continue
		}
		if !c.pure(l) {
			c.note(l, "store into %s left alone: the slot expression has effects", exprString(c.fset, l))
			continue
		}
		if c.implicitInstance(n.Rhs[i]) {
			c.note(l, "store into %s left alone: the value is a generic function instantiated by the assignment", exprString(c.fset, l))
			continue
		}
		op := c.staticOp(n.Rhs[i], typeOf(c.info, l))
		id := c.site(siteKind(op), l, l)
		c.ed.add(n.Rhs[i], action{kind: actStore, site: id, op: op, lhs: l})
	}
}

// tupleStore records the stores into slots of L1, L2 = f() (or a comma-ok
// form), which apply turns into a block with temporaries: only in a
// statement list, and for comma-ok with an ok of type bool (or _).
func (c *collector) tupleStore(n *ast.AssignStmt, parent ast.Node) {
	for _, l := range n.Lhs {
		if en, ok := c.entry(l); ok {
			c.note(l, "tuple store into the map entry %s left alone", en.text)
		}
	}
	if !inStmtList(parent) {
		for _, l := range n.Lhs {
			if c.slot(l) {
				c.note(n, "tuple store outside a statement list left alone")
				break
			}
		}
		return
	}
	tuple, ok := typeOf(c.info, n.Rhs[0]).(*types.Tuple)
	commaOK := !ok
	slots := map[int]*tupleSlot{}
	for i, l := range n.Lhs {
		if !c.slot(l) || !c.pure(l) {
			continue
		}
		var vt types.Type
		if ok && i < tuple.Len() {
			vt = tuple.At(i).Type()
		} else if commaOK && i == 0 {
			vt = typeOf(c.info, n.Rhs[0])
		}
		op := "store"
		if vt != nil {
			op = storeOpFor(vt, typeOf(c.info, l))
		}
		slots[i] = &tupleSlot{op: op}
	}
	if len(slots) == 0 {
		return
	}
	if commaOK && len(n.Lhs) == 2 {
		// v, ok = m[k] / x.(T) / <-ch: the temporary for ok is a bool.
		if id, isID := n.Lhs[1].(*ast.Ident); !(isID && id.Name == "_") && !types.Identical(typeOf(c.info, n.Lhs[1]), types.Typ[types.Bool]) {
			c.note(n, "comma-ok store with a non-bool ok left alone")
			return
		}
	}
	for i, l := range n.Lhs {
		if s := slots[i]; s != nil {
			s.site = c.site(siteKind(s.op), l, l)
		}
	}
	c.ed.add(n, action{kind: actTuple, slots: slots})
}

func inStmtList(parent ast.Node) bool {
	switch parent.(type) {
	case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause, *ast.LabeledStmt:
		return true
	}
	return false
}

// goStmt records Fork/Adopt for a go statement. Of a function literal, the
// token becomes its first parameter; otherwise the function value and the
// arguments are evaluated into temporaries first, which needs every copied
// argument to keep its type in a temporary.
func (c *collector) goStmt(n *ast.GoStmt) {
	if _, ok := ast.Unparen(n.Call.Fun).(*ast.FuncLit); ok {
		c.ed.add(n, action{kind: actGo, site: c.goSite(n)})
		return
	}
	if id, ok := ast.Unparen(n.Call.Fun).(*ast.Ident); ok {
		if _, ok := c.info.Uses[id].(*types.Builtin); ok {
			c.note(n, "go statement of a builtin left alone")
			return
		}
	}
	if tv := c.info.Types[n.Call.Fun]; tv.IsType() {
		return // conversion: not a call
	}
	act := action{kind: actGo, copyFun: !c.isFuncObj(n.Call.Fun)}
	for _, a := range n.Call.Args {
		tv := c.info.Types[a]
		constant := tv.Value != nil || tv.IsNil()
		if !constant && !c.tempable(a) {
			c.note(a, "go statement left without Fork/Adopt: argument %s cannot be copied into a temporary", exprString(c.fset, a))
			return
		}
		act.copyArgs = append(act.copyArgs, !constant)
	}
	act.site = c.goSite(n)
	c.ed.add(n, act)
}

// goSite allocates the site of a go statement (kind "go", at the go
// keyword): the parent records a go row there when the statement runs.
// Expr is the started function's text, "func literal" for a literal.
func (c *collector) goSite(n *ast.GoStmt) uint32 {
	pos := c.fset.Position(n.Pos())
	expr := "func literal"
	if _, ok := ast.Unparen(n.Call.Fun).(*ast.FuncLit); !ok {
		expr = exprString(c.fset, n.Call.Fun)
	}
	c.ed.numSites++
	return c.alloc.add(sites.Site{Kind: "go", File: pos.Filename, Line: pos.Line, Col: pos.Column, Expr: expr, Func: c.funcName()})
}
