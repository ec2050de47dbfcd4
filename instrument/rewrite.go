package instrument

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"regexp"
	"strconv"
	"strings"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
	"github.com/dave/dst/dstutil"

	"github.com/memorder/wafl/instrument/sites"
)

// Names of the helpers the rewritten code calls. They are declared in the
// helper file generated into every instrumented package (helpers.go), which
// imports the runtime under names user code cannot shadow.
const (
	hUse        = "_waflUse"
	hStore      = "_waflStore"
	hStoreAny   = "_waflStoreAny"
	hInit       = "_waflInit"
	hNil        = "_waflNil"
	hSend       = "_waflSend"
	hClose      = "_waflClose"
	hPtrStore   = "_waflPtrStore"
	hValueStore = "_waflValueStore"
	hFork       = "_waflFork"
	hAdopt      = "_waflAdopt"
	hToken      = "_waflToken"
	hExit       = "_waflExit"
	hFinish     = "_waflFinish"
	userMain    = "_waflTestMain"
	tokenVar    = "_wafl_t"
)

// siteAlloc hands out dense site ids across all files of one build.
type siteAlloc struct {
	sites []sites.Site
}

func (a *siteAlloc) add(s sites.Site) uint32 {
	s.ID = uint32(len(a.sites) + 1)
	a.sites = append(a.sites, s)
	return s.ID
}

// actKind is what the rewriter does to one original node.
type actKind int

const (
	actUse         actKind = iota // slot expr X -> (*_waflUse(id, &X))
	actStore                      // rhs R -> _waflStore/_waflInit(id, R, &L) or _waflNil(id, &L)
	actSend                       // channel expr C -> _waflSend(id, C)
	actClose                      // close(C) -> _waflClose(id, C)
	actAtomicUse                  // atomic receiver E -> _waflUse(id, &E)
	actAtomicStore                // E.Store(v) -> _waflPtrStore/_waflValueStore(id, &E, v)
	actTuple                      // L1, L2 = f() with slots -> block with temporaries
	actGo                         // go statement -> Fork/Adopt
	actExit                       // os.Exit -> _waflExit
)

type action struct {
	kind  actKind
	site  uint32
	op    string             // actStore: "init", "dispose", "store"
	ptr   bool               // actAtomic*: receiver already a pointer
	lhs   ast.Expr           // actStore: the slot stored to
	slots map[int]*tupleSlot // actTuple: lhs index -> store
}

type tupleSlot struct {
	site uint32
	op   string
}

// fileRewriter rewrites one file.
type fileRewriter struct {
	fset     *token.FileSet
	info     *types.Info
	shared   map[*types.Var]bool
	alloc    *siteAlloc
	file     *ast.File
	filename string // absolute path of the original file
	isTest   bool

	acts    map[ast.Node][]action
	clones  map[ast.Node]dst.Expr // actStore/actTuple: pristine copies of the lhs slots
	nsites  int
	funcs   []string // enclosing function names, innermost last
	litSeq  map[string]int
	temp    int
	exitUse map[string]bool // import names of os whose Exit was replaced
	notes   []string        // why some constructs were left alone
}

// fileResult is the outcome of rewriting one file.
type fileResult struct {
	src      []byte
	numSites int
	changed  bool
	mainWrap bool     // the user's TestMain was renamed and wrapped
	notes    []string // constructs left alone on purpose
}

// rewriteOptions tune the output (tests turn off line directives to keep
// goldens readable).
type rewriteOptions struct {
	lineDirectives bool
}

// rewriteFile rewrites file, whose path (unadjusted by //line comments) is
// filename.
func rewriteFile(fset *token.FileSet, info *types.Info, shared map[*types.Var]bool, alloc *siteAlloc, file *ast.File, filename string, isTest bool, opt rewriteOptions) (*fileResult, error) {
	r := &fileRewriter{
		fset: fset, info: info, shared: shared, alloc: alloc, file: file,
		filename: filename, isTest: isTest,
		acts: map[ast.Node][]action{}, clones: map[ast.Node]dst.Expr{},
		litSeq: map[string]int{}, exitUse: map[string]bool{},
	}
	r.collect()

	dec := decorator.NewDecorator(fset)
	df, err := dec.DecorateFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: decorating: %v", filename, err)
	}
	res := &fileResult{numSites: r.nsites, notes: r.notes}
	if len(r.acts) > 0 {
		res.changed = true
		r.apply(dec, df)
	}
	if isTest {
		if r.wrapTestMain(df) {
			res.changed, res.mainWrap = true, true
		}
	}
	if !res.changed {
		return res, nil
	}
	for name := range r.exitUse {
		df.Decls = append(df.Decls, blankUse(name))
	}
	if opt.lineDirectives {
		markPositions(dec, df, fset)
	}
	var buf bytes.Buffer
	if err := decorator.Fprint(&buf, df); err != nil {
		return nil, fmt.Errorf("%s: printing rewritten file: %v", filename, err)
	}
	out := buf.Bytes()
	if opt.lineDirectives {
		out = fixPositions(out, filename)
	} else {
		out = posMarker.ReplaceAll(out, nil)
	}
	res.src = out
	return res, nil
}

// ---- collection: decide on the original syntax what to rewrite ----

func (r *fileRewriter) site(kind string, n ast.Node, expr ast.Expr) uint32 {
	pos := r.fset.Position(n.Pos())
	r.nsites++
	return r.alloc.add(sites.Site{
		Kind: kind,
		File: pos.Filename,
		Line: pos.Line,
		Col:  pos.Column,
		Expr: exprString(r.fset, expr),
		Func: r.funcName(),
	})
}

func (r *fileRewriter) note(n ast.Node, format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf("%s: %s", r.fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
}

func (r *fileRewriter) add(n ast.Node, a action) {
	r.acts[n] = append(r.acts[n], a)
}

func (r *fileRewriter) has(n ast.Node, k actKind) bool {
	for _, a := range r.acts[n] {
		if a.kind == k {
			return true
		}
	}
	return false
}

func (r *fileRewriter) funcName() string {
	if len(r.funcs) == 0 {
		return ""
	}
	return r.funcs[len(r.funcs)-1]
}

func (r *fileRewriter) collect() {
	for _, d := range r.file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				continue
			}
			r.funcs = append(r.funcs, declName(d))
			r.walk(d.Body)
			r.funcs = r.funcs[:0]
		case *ast.GenDecl:
			// Package-level initializers run before any goroutine exists;
			// only function literals in them are instrumented.
			ast.Inspect(d, func(n ast.Node) bool {
				if lit, ok := n.(*ast.FuncLit); ok {
					r.funcs = append(r.funcs, "init")
					r.walk(lit)
					r.funcs = r.funcs[:0]
					return false
				}
				return true
			})
		}
	}
}

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

// walk visits a function body in source order (so site ids follow the
// text), recording actions.
func (r *fileRewriter) walk(root ast.Node) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			if lit, ok := stack[len(stack)-1].(*ast.FuncLit); ok && lit != root {
				r.funcs = r.funcs[:len(r.funcs)-1]
			}
			stack = stack[:len(stack)-1]
			return true
		}
		if e, ok := n.(ast.Expr); ok {
			// Constant expressions (len(*p) of a pointer to an array, say)
			// are evaluated by the compiler: no access happens at run
			// time, and a hook would make them non-constant.
			if tv, ok := r.info.Types[e]; ok && tv.Value != nil {
				return false // no f(nil) follows: nothing was pushed
			}
		}
		var parent ast.Node
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.FuncLit:
			if n != root {
				outer := r.funcs[0]
				r.litSeq[outer]++
				r.funcs = append(r.funcs, fmt.Sprintf("%s.func%d", outer, r.litSeq[outer]))
			}
		case *ast.AssignStmt:
			r.assign(n, parent)
		case *ast.IncDecStmt:
			r.mapWrite(n.X)
		case *ast.SelectorExpr:
			r.selector(n)
		case *ast.StarExpr:
			if r.slot(n.X) && refKind(typeOf(r.info, n.X)) == "pointer" {
				r.use(n.X)
			}
		case *ast.IndexExpr:
			if r.slot(n.X) {
				if p, ok := under(typeOf(r.info, n.X)).(*types.Pointer); ok {
					if _, ok := under(p.Elem()).(*types.Array); ok {
						r.use(n.X)
					}
				}
			}
		case *ast.CallExpr:
			r.call(n)
		case *ast.SendStmt:
			id := r.site("send", n, n.Chan)
			r.add(n.Chan, action{kind: actSend, site: id})
		case *ast.GoStmt:
			r.goStmt(n)
		case *ast.Ident:
			if r.isOSExit(n) {
				if sel, ok := parent.(*ast.SelectorExpr); ok && sel.Sel == n {
					if x, ok := sel.X.(*ast.Ident); ok {
						r.exitUse[x.Name] = true
						r.add(sel, action{kind: actExit})
					}
				} else {
					r.exitUse[n.Name] = true // dot import
					r.add(n, action{kind: actExit})
				}
			}
		}
		return true
	})
}

func (r *fileRewriter) isOSExit(id *ast.Ident) bool {
	fn, ok := r.info.Uses[id].(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == "os" && fn.Name() == "Exit"
}

func (r *fileRewriter) use(x ast.Expr) {
	if r.has(x, actUse) {
		return
	}
	id := r.site("use", x, x)
	r.add(x, action{kind: actUse, site: id})
}

// selector: x.f.g and x.f.M() use the slot x.f when it holds a pointer
// (field or method) or an interface (method); p.Load().g uses an atomic.
func (r *fileRewriter) selector(n *ast.SelectorExpr) {
	sel := r.info.Selections[n]
	if sel == nil {
		return
	}
	if r.slot(n.X) {
		switch refKind(typeOf(r.info, n.X)) {
		case "pointer":
			r.use(n.X)
			return
		case "interface":
			r.use(n.X)
			return
		}
	}
	r.atomicLoadUse(n.X)
}

// atomicLoadUse records a use when e is p.Load() (atomic.Pointer) or
// v.Load().(T) (atomic.Value) and the result is dereferenced.
func (r *fileRewriter) atomicLoadUse(e ast.Expr) {
	e = ast.Unparen(e)
	want := "pointer"
	if ta, ok := e.(*ast.TypeAssertExpr); ok {
		e, want = ast.Unparen(ta.X), "value"
	}
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return
	}
	fsel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || fsel.Sel.Name != "Load" {
		return
	}
	kind, isPtr := atomicKind(typeOf(r.info, fsel.X))
	if kind != want {
		return
	}
	if !isPtr && !r.info.Types[fsel.X].Addressable() {
		return
	}
	if r.has(fsel.X, actAtomicUse) {
		return
	}
	id := r.site("atomic-load", fsel, fsel.X)
	r.add(fsel.X, action{kind: actAtomicUse, site: id, ptr: isPtr})
}

func (r *fileRewriter) call(n *ast.CallExpr) {
	fun := ast.Unparen(n.Fun)
	// Builtin close: dispose of the channel, use of its slot.
	if id, ok := fun.(*ast.Ident); ok {
		if b, ok := r.info.Uses[id].(*types.Builtin); ok {
			if b.Name() == "close" && len(n.Args) == 1 && isChanType(typeOf(r.info, n.Args[0])) {
				site := r.site("close", n, n.Args[0])
				r.add(n, action{kind: actClose, site: site})
				if r.slot(n.Args[0]) {
					r.use(n.Args[0])
				}
			}
			return
		}
	}
	// x.fn(): call of a func-typed slot.
	if r.info.Types[n.Fun].IsValue() && r.slot(n.Fun) && refKind(typeOf(r.info, n.Fun)) == "func" {
		r.use(n.Fun)
		return
	}
	// p.Store(v) on atomic.Pointer / atomic.Value.
	if fsel, ok := fun.(*ast.SelectorExpr); ok && fsel.Sel.Name == "Store" && len(n.Args) == 1 {
		if sel := r.info.Selections[fsel]; sel != nil && sel.Kind() == types.MethodVal {
			kind, isPtr := atomicKind(typeOf(r.info, fsel.X))
			if kind != "" && (isPtr || r.info.Types[fsel.X].Addressable()) {
				id := r.site("atomic-store", n, fsel.X)
				r.add(n, action{kind: actAtomicStore, site: id, ptr: isPtr, op: kind})
			}
		}
	}
}

// mapWrite records a use of the map slot m in m[k] = v, m[k] op= v, m[k]++.
func (r *fileRewriter) mapWrite(lhs ast.Expr) {
	ix, ok := ast.Unparen(lhs).(*ast.IndexExpr)
	if !ok {
		return
	}
	if _, ok := under(typeOf(r.info, ix.X)).(*types.Map); ok && r.slot(ix.X) {
		r.use(ix.X)
	}
}

func inStmtList(parent ast.Node) bool {
	switch parent.(type) {
	case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause, *ast.LabeledStmt:
		return true
	}
	return false
}

func (r *fileRewriter) assign(n *ast.AssignStmt, parent ast.Node) {
	for _, l := range n.Lhs {
		r.mapWrite(l)
	}
	if n.Tok != token.ASSIGN {
		return
	}
	if cc, ok := parent.(*ast.CommClause); ok && cc.Comm == n {
		// case x.f = <-ch: the right side must stay a receive.
		for _, l := range n.Lhs {
			if r.slot(l) {
				r.note(l, "store into %s in a select case left alone", exprString(r.fset, l))
			}
		}
		return
	}
	if len(n.Lhs) == len(n.Rhs) {
		for i, l := range n.Lhs {
			if !r.slot(l) {
				continue
			}
			if !r.pure(l) {
				r.note(l, "store into %s left alone: the slot expression has effects", exprString(r.fset, l))
				continue
			}
			if r.implicitInstance(n.Rhs[i]) {
				r.note(l, "store into %s left alone: the value is a generic function instantiated by the assignment", exprString(r.fset, l))
				continue
			}
			op := r.staticOp(n.Rhs[i], typeOf(r.info, l))
			id := r.site(siteKind(op), l, l)
			r.add(n.Rhs[i], action{kind: actStore, site: id, op: op, lhs: l})
			r.clones[n.Rhs[i]] = nil // filled in from the dst tree
		}
		return
	}
	// L1, L2 = f(): only in a statement list, where temporaries fit.
	if len(n.Rhs) != 1 {
		return
	}
	if !inStmtList(parent) {
		for _, l := range n.Lhs {
			if r.slot(l) {
				r.note(n, "tuple store outside a statement list left alone")
				break
			}
		}
		return
	}
	tuple, ok := typeOf(r.info, n.Rhs[0]).(*types.Tuple)
	commaOK := !ok
	slots := map[int]*tupleSlot{}
	for i, l := range n.Lhs {
		if r.slot(l) && r.pure(l) {
			var vt types.Type
			if ok && i < tuple.Len() {
				vt = tuple.At(i).Type()
			} else if commaOK && i == 0 {
				vt = typeOf(r.info, n.Rhs[0])
			}
			op := "store"
			if vt != nil {
				op = storeOpFor(vt, typeOf(r.info, l))
			}
			slots[i] = &tupleSlot{op: op}
		}
	}
	if len(slots) == 0 {
		return
	}
	if commaOK && len(n.Lhs) == 2 {
		// v, ok = m[k] / x.(T) / <-ch: the temporary for ok is a bool.
		if id, isID := n.Lhs[1].(*ast.Ident); !(isID && id.Name == "_") && !types.Identical(typeOf(r.info, n.Lhs[1]), types.Typ[types.Bool]) {
			r.note(n, "comma-ok store with a non-bool ok left alone")
			return
		}
	}
	for i, l := range n.Lhs {
		if s := slots[i]; s != nil {
			s.site = r.site(siteKind(s.op), l, l)
		}
	}
	r.add(n, action{kind: actTuple, slots: slots})
}

func (r *fileRewriter) goStmt(n *ast.GoStmt) {
	if _, ok := ast.Unparen(n.Call.Fun).(*ast.FuncLit); ok {
		r.add(n, action{kind: actGo})
		return
	}
	if id, ok := ast.Unparen(n.Call.Fun).(*ast.Ident); ok {
		if _, ok := r.info.Uses[id].(*types.Builtin); ok {
			r.note(n, "go statement of a builtin left alone")
			return
		}
	}
	if tv := r.info.Types[n.Call.Fun]; tv.IsType() {
		return // conversion: not a call
	}
	for _, a := range n.Call.Args {
		if tv := r.info.Types[a]; tv.Value == nil && !tv.IsNil() && !r.tempable(a) {
			r.note(a, "go statement left without Fork/Adopt: argument %s cannot be copied into a temporary", exprString(r.fset, a))
			return
		}
	}
	r.add(n, action{kind: actGo})
}

// ---- application: rebuild the dst tree ----

func (r *fileRewriter) apply(dec *decorator.Decorator, df *dst.File) {
	astOf := func(n dst.Node) ast.Node { return dec.Ast.Nodes[n] }
	pre := func(c *dstutil.Cursor) bool {
		n := c.Node()
		a := astOf(n)
		if a == nil {
			return true
		}
		// Take pristine copies of stored-to slots before their own
		// subexpressions are rewritten.
		switch s := a.(type) {
		case *ast.AssignStmt:
			ds := n.(*dst.AssignStmt)
			for i, rhs := range s.Rhs {
				if _, ok := r.clones[rhs]; ok && i < len(ds.Lhs) {
					r.clones[rhs] = cleanClone(ds.Lhs[i])
				}
			}
			if r.has(s, actTuple) {
				for i := range ds.Lhs {
					r.clones[s.Lhs[i]] = cleanClone(ds.Lhs[i])
				}
			}
		}
		return true
	}
	post := func(c *dstutil.Cursor) bool {
		n := c.Node()
		a := astOf(n)
		if a == nil {
			return true
		}
		acts := r.acts[a]
		if len(acts) == 0 {
			return true
		}
		for _, act := range acts {
			n = r.applyOne(act, a, n)
		}
		c.Replace(n)
		return true
	}
	dstutil.Apply(df, pre, post)
}

func (r *fileRewriter) applyOne(act action, a ast.Node, n dst.Node) dst.Node {
	switch act.kind {
	case actUse:
		x := n.(dst.Expr)
		return paren(&dst.StarExpr{X: call(hUse, siteLit(act.site), addr(x))})
	case actSend:
		return call(hSend, siteLit(act.site), n.(dst.Expr))
	case actClose:
		ce := n.(*dst.CallExpr)
		return call(hClose, siteLit(act.site), ce.Args[0])
	case actAtomicUse:
		x := n.(dst.Expr)
		if !act.ptr {
			x = addr(x)
		}
		return call(hUse, siteLit(act.site), x)
	case actAtomicStore:
		ce := n.(*dst.CallExpr)
		fsel := unparen(ce.Fun).(*dst.SelectorExpr)
		recv := fsel.X
		if !act.ptr {
			recv = addr(recv)
		}
		h := hPtrStore
		if act.op == "value" {
			h = hValueStore
		}
		out := call(h, siteLit(act.site), recv, ce.Args[0])
		out.Decs = ce.Decs
		return out
	case actStore:
		slot := r.clones[a.(ast.Expr)]
		x := n.(dst.Expr)
		switch act.op {
		case "dispose":
			return call(hNil, siteLit(act.site), addr(slot))
		case "init":
			return call(hInit, siteLit(act.site), x, addr(slot))
		case "store-any":
			return call(hStoreAny, siteLit(act.site), x, addr(slot))
		default:
			return call(hStore, siteLit(act.site), x, addr(slot))
		}
	case actExit:
		return dst.NewIdent(hExit)
	case actTuple:
		return r.tuple(act, a.(*ast.AssignStmt), n.(*dst.AssignStmt))
	case actGo:
		return r.goRewrite(a.(*ast.GoStmt), n.(*dst.GoStmt))
	}
	return n
}

// tuple rewrites L1, L2 = f() into
// { _wafl_v1, _wafl_v2 := f(); L1, L2 = _waflStore(id, _wafl_v1, &L1), _wafl_v2 }.
func (r *fileRewriter) tuple(act action, a *ast.AssignStmt, n *dst.AssignStmt) dst.Stmt {
	var temps []dst.Expr
	var rhs []dst.Expr
	for i := range n.Lhs {
		r.temp++
		name := "_wafl_v" + strconv.Itoa(r.temp)
		temps = append(temps, dst.NewIdent(name))
		var v dst.Expr = dst.NewIdent(name)
		if s, ok := act.slots[i]; ok {
			slot := addr(r.clones[a.Lhs[i]])
			switch s.op {
			case "init":
				v = call(hInit, siteLit(s.site), v, slot)
			case "store-any":
				v = call(hStoreAny, siteLit(s.site), v, slot)
			default:
				v = call(hStore, siteLit(s.site), v, slot)
			}
		}
		rhs = append(rhs, v)
	}
	def := &dst.AssignStmt{Lhs: temps, Tok: token.DEFINE, Rhs: n.Rhs}
	def.Decs.Before, def.Decs.After = dst.NewLine, dst.NewLine
	def.Decs.Start.Append(r.marker(a.Pos()))
	n.Rhs = rhs
	decs := n.Decs
	n.Decs = dst.AssignStmtDecorations{}
	n.Decs.Before, n.Decs.After = dst.NewLine, dst.NewLine
	return &dst.BlockStmt{
		List: []dst.Stmt{def, n},
		Decs: dst.BlockStmtDecorations{NodeDecs: decs.NodeDecs},
	}
}

// goRewrite gives the new goroutine its parent's context.
//
//	go func(a A) { body }(x)  ->  go func(_wafl_t _waflToken, a A) { _waflAdopt(_wafl_t); body }(_waflFork(), x)
//	go f(x, y)                ->  { _wafl_v1, _wafl_v2 := f, x ...; go func(_wafl_t _waflToken) { _waflAdopt(_wafl_t); _wafl_v1(_wafl_v2...) }(_waflFork()) }
func (r *fileRewriter) goRewrite(a *ast.GoStmt, n *dst.GoStmt) dst.Stmt {
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
		n.Call.Args = append([]dst.Expr{call(hFork)}, n.Call.Args...)
		return n
	}
	var names, vals []dst.Expr
	tmp := func(e dst.Expr) dst.Expr {
		r.temp++
		name := "_wafl_v" + strconv.Itoa(r.temp)
		names = append(names, dst.NewIdent(name))
		vals = append(vals, e)
		return dst.NewIdent(name)
	}
	fun := n.Call.Fun
	if !r.isFuncObj(a.Call.Fun) {
		fun = tmp(fun)
	}
	var args []dst.Expr
	for i, arg := range n.Call.Args {
		tv := r.info.Types[a.Call.Args[i]]
		if tv.Value != nil || tv.IsNil() {
			args = append(args, arg)
			continue
		}
		args = append(args, tmp(arg))
	}
	inner := &dst.CallExpr{Fun: fun, Args: args, Ellipsis: n.Call.Ellipsis}
	lit := &dst.FuncLit{
		Type: &dst.FuncType{Func: true, Params: &dst.FieldList{List: []*dst.Field{tokField}}},
		Body: &dst.BlockStmt{List: []dst.Stmt{adopt, &dst.ExprStmt{X: inner}}},
	}
	g := &dst.GoStmt{Call: &dst.CallExpr{Fun: lit, Args: []dst.Expr{call(hFork)}}}
	if len(names) == 0 {
		g.Decs = n.Decs
		return g
	}
	temps := &dst.AssignStmt{Lhs: names, Tok: token.DEFINE, Rhs: vals}
	temps.Decs.Start.Append(r.marker(a.Pos()))
	temps.Decs.Before, temps.Decs.After = dst.NewLine, dst.NewLine
	g.Decs.Before, g.Decs.After = dst.NewLine, dst.NewLine
	g.Decs.Start.Append(r.marker(a.Pos()))
	return &dst.BlockStmt{
		List: []dst.Stmt{temps, g},
		Decs: dst.BlockStmtDecorations{NodeDecs: n.Decs.NodeDecs},
	}
}

// wrapTestMain renames a user TestMain and adds
// func TestMain(m *testing.M) { _waflTestMain(m); _waflFinish() }.
func (r *fileRewriter) wrapTestMain(df *dst.File) bool {
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

// hasTestMain reports whether the file declares func TestMain.
func hasTestMain(f *ast.File) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" {
			return true
		}
	}
	return false
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

func exprString(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	if err := formatNode(&b, fset, e); err != nil {
		return "?"
	}
	return b.String()
}

// ---- positions ----

// posMarker is the placeholder markPositions puts before every original
// statement and declaration; fixPositions turns the ones whose line moved
// into /*line*/ directives and deletes the rest.
var posMarker = regexp.MustCompile(`/\*WAFLPOS:(\d+):(\d+)\*/ ?`)

// marker returns the position marker for p (see markPositions).
func (r *fileRewriter) marker(p token.Pos) string {
	pos := r.fset.Position(p)
	return fmt.Sprintf("/*WAFLPOS:%d:%d*/", pos.Line, pos.Column)
}

func markPositions(dec *decorator.Decorator, df *dst.File, fset *token.FileSet) {
	marker := func(p token.Pos) string {
		pos := fset.Position(p)
		return fmt.Sprintf("/*WAFLPOS:%d:%d*/", pos.Line, pos.Column)
	}
	// Declarations: after the keyword (a comment before it would be
	// printed on a line of its own).
	for i, d := range df.Decls {
		if i == 0 {
			continue
		}
		switch d := d.(type) {
		case *dst.FuncDecl:
			a, ok := dec.Ast.Nodes[d].(*ast.FuncDecl)
			if !ok {
				continue
			}
			next := a.Name.Pos()
			if a.Recv != nil {
				next = a.Recv.Pos()
			}
			d.Decs.Func.Append(marker(next))
		case *dst.GenDecl:
			a, ok := dec.Ast.Nodes[d].(*ast.GenDecl)
			if !ok || len(a.Specs) == 0 {
				continue
			}
			next := a.Specs[0].Pos()
			if a.Lparen.IsValid() {
				next = a.Lparen
			}
			d.Decs.Tok.Append(marker(next))
		}
	}
	dst.Inspect(df, func(n dst.Node) bool {
		var list []dst.Stmt
		switch n := n.(type) {
		case *dst.BlockStmt:
			list = n.List
		case *dst.CaseClause:
			list = n.Body
		case *dst.CommClause:
			list = n.Body
		}
		for _, s := range list {
			if a := dec.Ast.Nodes[s]; a != nil {
				s.Decorations().Start.Append(marker(a.Pos()))
			}
		}
		return true
	})
}

// fixPositions keeps every original statement on its original line: where
// the line the compiler would compute differs from the original one, the
// marker becomes a /*line file:line:col*/ directive; other markers go away.
// A marker the printer left at the end of a line (or alone on one) belongs
// to the statement on the next line and moves there; lines left empty by
// removed markers are dropped.
func fixPositions(src []byte, filename string) []byte {
	var out bytes.Buffer
	lines := bytes.SplitAfter(src, []byte("\n"))
	outLine, baseOut, baseMapped := 0, 1, 1
	var pending []byte // a marker moved from the previous line
	for _, line := range lines {
		if len(line) == 0 {
			continue
		}
		if pending != nil {
			indent := len(line) - len(bytes.TrimLeft(line, " \t"))
			line = append(append(append([]byte{}, line[:indent]...), pending...), line[indent:]...)
			pending = nil
		}
		hadMarker := false
		var rebuilt []byte
		rest := line
		for {
			loc := posMarker.FindSubmatchIndex(rest)
			if loc == nil {
				break
			}
			hadMarker = true
			if len(bytes.TrimSpace(rest[loc[1]:])) == 0 {
				pending = append([]byte{}, rest[loc[0]:loc[1]]...)
				rest = append(append([]byte{}, rest[:loc[0]]...), bytes.TrimLeft(rest[loc[1]:], " \t")...)
				break
			}
			rebuilt = append(rebuilt, rest[:loc[0]]...)
			l, _ := strconv.Atoi(string(rest[loc[2]:loc[3]]))
			col, _ := strconv.Atoi(string(rest[loc[4]:loc[5]]))
			if baseMapped+(outLine+1)-baseOut != l {
				rebuilt = append(rebuilt, fmt.Sprintf("/*line %s:%d:%d*/", filename, l, col)...)
				baseOut, baseMapped = outLine+1, l
			}
			rest = rest[loc[1]:]
		}
		line = append(rebuilt, rest...)
		if hadMarker && len(bytes.TrimSpace(line)) == 0 {
			continue // the line held only markers
		}
		if pending != nil && !bytes.HasSuffix(line, []byte("\n")) {
			line = append(line, '\n')
		}
		outLine++
		out.Write(bytes.TrimRight(line, " \t\n"))
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// isChanType reports whether t is a channel type (not a type parameter).
func isChanType(t types.Type) bool {
	if t == nil {
		return false
	}
	if _, ok := types.Unalias(t).(*types.TypeParam); ok {
		return false
	}
	_, ok := t.Underlying().(*types.Chan)
	return ok
}
