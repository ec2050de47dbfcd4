// Loads as uses: which reads of a reference slot into a local, a call
// argument or a return value hand the value on to a dereference. Go code
// copies a field before using it (p := s.p; …; p.x), passes it to a
// helper that dereferences it (process(s.cfg)), returns it from a getter;
// the thesis logs every heap read, wafl logs the reads whose value can
// reach a dereference (docs/instrumentation.md, "Loads").
//
// The decision is a def-use summary of the package (flow, built once per
// package before any file is rewritten): a node is a local variable or
// parameter, or the result of a function of the package; a node reaches a
// dereference when the function dereferences it (x.f, x.M(), *x, x[k] = v
// on a map, x(), close(x), x <- v), or copies it into a node that does
// (w := x, f(x) with f of this package, return x). A node compared with
// nil somewhere is guarded against nil: it only counts for channel
// operations, which a nil check does not protect from a closed channel.
// The load's site remembers the lines of those dereferences (and of the
// calls and copies on the way), so that a crash there is attributed to it.

package instrument

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"

	"github.com/memorder/wafl/instrument/sites"
)

// maxDerefs bounds the dereference lines remembered per node.
const maxDerefs = 8

// flowNode is a local variable or parameter (*types.Var), or the result
// of a function of the package (resultNode).
type flowNode any

// resultNode is the i-th result of fn.
type resultNode struct {
	fn *types.Func
	i  int
}

// reach is what is known of one node.
type reach struct {
	nilDeref bool        // dereferenced where a nil value panics
	chanOp   bool        // sent on or closed
	closes   bool        // closed (chanOp without the sends)
	checked  bool        // compared with nil somewhere
	exported bool        // the result of an exported function: callers elsewhere
	lines    []token.Pos // the dereferences (and hand-overs) it reaches
	next     []flowEdge  // nodes it is copied into
}

type flowEdge struct {
	to  flowNode
	pos token.Pos // the copy or call
}

// flow is the def-use summary of one package.
type flow struct {
	info  *types.Info
	pkg   *types.Package
	nodes map[flowNode]*reach
	// done holds the final answer per node after solve.
	done map[flowNode]*reach
}

// newFlow builds the summary of the package's files.
func newFlow(info *types.Info, pkg *types.Package, files []*ast.File) *flow {
	f := &flow{info: info, pkg: pkg, nodes: map[flowNode]*reach{}}
	for _, file := range files {
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				if gd, ok := d.(*ast.GenDecl); ok {
					f.scan(gd, nil)
				}
				continue
			}
			fn, _ := info.Defs[fd.Name].(*types.Func)
			if fn != nil && fd.Name.IsExported() {
				if sig, ok := fn.Type().(*types.Signature); ok {
					for i := 0; i < sig.Results().Len(); i++ {
						f.node(resultNode{fn, i}).exported = true
					}
				}
			}
			f.scan(fd.Body, fn)
		}
	}
	f.solve()
	return f
}

func (f *flow) node(n flowNode) *reach {
	r := f.nodes[n]
	if r == nil {
		r = &reach{}
		f.nodes[n] = r
	}
	return r
}

// localVar returns the local variable or parameter e names.
func (f *flow) localVar(e ast.Expr) *types.Var {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return nil
	}
	v, ok := f.info.Uses[id].(*types.Var)
	if !ok {
		v, ok = f.info.Defs[id].(*types.Var)
	}
	if !ok || v.IsField() || isPackageLevel(v) {
		return nil
	}
	return v
}

// calleeFunc returns the function of the package that call calls
// statically (a function or a method, not through an interface or a func
// value), at its origin for generic ones.
func (f *flow) calleeFunc(call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch x := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		if sel := f.info.Selections[x]; sel != nil {
			if sel.Kind() != types.MethodVal {
				return nil
			}
			if types.IsInterface(sel.Recv()) {
				return nil
			}
		}
		id = x.Sel
	case *ast.IndexExpr:
		return f.calleeFunc(&ast.CallExpr{Fun: x.X})
	case *ast.IndexListExpr:
		return f.calleeFunc(&ast.CallExpr{Fun: x.X})
	default:
		return nil
	}
	fn, ok := f.info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() != f.pkg {
		return nil
	}
	return fn.Origin()
}

// recvNode returns the receiver of the method that x.M (called or a
// method value) selects when x's value is copied into it: a method of the
// package with a value receiver on a named map, channel or func type
// (`type set map[K]V; func (s set) add(…)`), so that `x.M(…)` hands x on
// like an argument. Pointer-typed and interface-typed receivers are
// dereferenced by the selection itself; a pointer receiver of a named map
// type takes x's address, and the method's `*s` is a slot of its own.
func (f *flow) recvNode(x *ast.SelectorExpr) *types.Var {
	sel := f.info.Selections[x]
	if sel == nil || sel.Kind() != types.MethodVal || len(sel.Index()) != 1 {
		return nil
	}
	switch refKind(typeOf(f.info, x.X)) {
	case "map", "chan", "func":
	default:
		return nil
	}
	fn, ok := sel.Obj().(*types.Func)
	if !ok || fn.Pkg() != f.pkg {
		return nil
	}
	sig, ok := fn.Origin().Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return nil
	}
	if _, isPtr := types.Unalias(sig.Recv().Type()).(*types.Pointer); isPtr {
		return nil
	}
	return sig.Recv()
}

// nodeOf returns the node e denotes: a local, or the single result of a
// call of a function of the package.
func (f *flow) nodeOf(e ast.Expr) flowNode {
	if v := f.localVar(e); v != nil {
		return v
	}
	if call, ok := ast.Unparen(e).(*ast.CallExpr); ok {
		if fn := f.calleeFunc(call); fn != nil {
			if sig, ok := fn.Type().(*types.Signature); ok && sig.Results().Len() == 1 {
				return resultNode{fn, 0}
			}
		}
	}
	return nil
}

// paramNode returns the parameter of fn that the i-th argument of a call
// binds (nil for the variadic tail).
func paramNode(fn *types.Func, i int) *types.Var {
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return nil
	}
	if sig.Variadic() && i >= sig.Params().Len()-1 {
		return nil
	}
	if i >= sig.Params().Len() {
		return nil
	}
	return sig.Params().At(i)
}

// scan records the dereferences, copies and nil checks of the nodes under
// root; fn is the enclosing declared function (nil in package-level
// declarations). Returns in function literals are not followed.
func (f *flow) scan(root ast.Node, fn *types.Func) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		node := f.nodeOf(e)
		if node == nil {
			return true
		}
		// The parent, skipping parentheses.
		child := ast.Node(e)
		var parent ast.Node
		for i := len(stack) - 2; i >= 0; i-- {
			if p, ok := stack[i].(*ast.ParenExpr); ok {
				child = p
				continue
			}
			parent = stack[i]
			break
		}
		var grand ast.Node
		for i := len(stack) - 2; i >= 0; i-- {
			if stack[i] == parent {
				if i > 0 {
					grand = stack[i-1]
				}
				break
			}
		}
		f.context(node, e, child, parent, grand, fn, inLit(stack))
		return true
	})
}

// inLit reports whether the innermost enclosing function of the top of
// stack is a function literal.
func inLit(stack []ast.Node) bool {
	for i := len(stack) - 2; i >= 0; i-- {
		if _, ok := stack[i].(*ast.FuncLit); ok {
			return true
		}
	}
	return false
}

// context records what the parent does with the node's value e (child is
// e or the parentheses around it).
func (f *flow) context(node flowNode, e ast.Expr, child, parent, grand ast.Node, fn *types.Func, lit bool) {
	r := f.node(node)
	kind := refKind(typeOf(f.info, e))
	deref := func() { r.nilDeref = true; r.lines = appendPos(r.lines, parent.Pos()) }
	switch p := parent.(type) {
	case *ast.SelectorExpr:
		if p.X == child && f.info.Selections[p] != nil && (kind == "pointer" || kind == "interface") {
			deref()
		}
		if p.X == child {
			if rv := f.recvNode(p); rv != nil {
				r.next = append(r.next, flowEdge{rv, p.Pos()})
			}
		}
	case *ast.StarExpr:
		if kind == "pointer" {
			deref()
		}
	case *ast.IndexExpr:
		if p.X != child {
			return
		}
		switch u := under(typeOf(f.info, e)).(type) {
		case *types.Pointer:
			if _, ok := under(u.Elem()).(*types.Array); ok {
				deref()
			}
		case *types.Map:
			if isStoreTarget(p, grand) {
				deref()
			}
		}
	case *ast.CallExpr:
		if p.Fun == child {
			if kind == "func" {
				deref()
			}
			return
		}
		if id, ok := ast.Unparen(p.Fun).(*ast.Ident); ok {
			if b, ok := f.info.Uses[id].(*types.Builtin); ok {
				if b.Name() == "close" && kind == "chan" {
					deref()
					r.chanOp, r.closes = true, true
				}
				return
			}
		}
		if callee := f.calleeFunc(p); callee != nil {
			for i, a := range p.Args {
				if a == child {
					if pv := paramNode(callee, i); pv != nil {
						r.next = append(r.next, flowEdge{pv, p.Pos()})
					}
				}
			}
		}
	case *ast.SendStmt:
		if p.Chan == child {
			r.chanOp = true
			r.lines = appendPos(r.lines, p.Pos())
		}
	case *ast.AssignStmt:
		if len(p.Lhs) != len(p.Rhs) {
			return
		}
		for i, rhs := range p.Rhs {
			if rhs == child {
				if w := f.localVar(p.Lhs[i]); w != nil {
					r.next = append(r.next, flowEdge{w, p.Pos()})
				}
			}
		}
	case *ast.ValueSpec:
		for i, v := range p.Values {
			if v == child && i < len(p.Names) {
				if w, ok := f.info.Defs[p.Names[i]].(*types.Var); ok {
					r.next = append(r.next, flowEdge{w, p.Pos()})
				}
			}
		}
	case *ast.ReturnStmt:
		if fn == nil || lit {
			return
		}
		for i, res := range p.Results {
			if res == child {
				r.next = append(r.next, flowEdge{resultNode{fn, i}, p.Pos()})
			}
		}
	case *ast.TypeAssertExpr:
		if p.X == child && p.Type != nil {
			if lit {
				fn = nil // a return in a function literal is the literal's
			}
			f.asserted(r, p, grand, fn)
		}
	case *ast.BinaryExpr:
		if p.Op == token.EQL || p.Op == token.NEQ {
			other := p.X
			if other == child {
				other = p.Y
			}
			if f.info.Types[other].IsNil() {
				r.checked = true
			}
		}
	}
}

// asserted records what happens to a node's interface value asserted by
// ta (ta's parent is grand): a nil interface asserted to a type panics
// (nil-assert), a comma-ok assertion hands on a nil value of the type, so
// the value reaches what the assertion's result reaches: a dereference
// (ta.f, ta.M(), *ta), a call, or a local it is copied into.
func (f *flow) asserted(r *reach, ta *ast.TypeAssertExpr, grand ast.Node, fn *types.Func) {
	deref := func() { r.nilDeref = true; r.lines = appendPos(r.lines, ta.Pos()) }
	switch g := grand.(type) {
	case *ast.SelectorExpr:
		if g.X == ta && f.info.Selections[g] != nil {
			deref()
		}
	case *ast.StarExpr:
		deref()
	case *ast.CallExpr:
		if g.Fun == ta {
			deref()
			return
		}
		if callee := f.calleeFunc(g); callee != nil {
			for i, a := range g.Args {
				if a == ta {
					if pv := paramNode(callee, i); pv != nil {
						r.next = append(r.next, flowEdge{pv, g.Pos()})
					}
				}
			}
		}
	case *ast.AssignStmt:
		for i, rhs := range g.Rhs {
			if rhs != ta {
				continue
			}
			if len(g.Rhs) == 1 && len(g.Lhs) == 2 {
				i = 0 // v, ok := x.(T)
			} else if len(g.Lhs) != len(g.Rhs) {
				return
			}
			if w := f.localVar(g.Lhs[i]); w != nil {
				r.next = append(r.next, flowEdge{w, g.Pos()})
			}
		}
	case *ast.ValueSpec:
		for i, v := range g.Values {
			if v != ta {
				continue
			}
			if len(g.Values) == 1 && len(g.Names) == 2 {
				i = 0
			}
			if i < len(g.Names) {
				if w, ok := f.info.Defs[g.Names[i]].(*types.Var); ok {
					r.next = append(r.next, flowEdge{w, g.Pos()})
				}
			}
		}
	case *ast.ReturnStmt:
		if fn == nil {
			return
		}
		for i, res := range g.Results {
			if res == ta {
				r.next = append(r.next, flowEdge{resultNode{fn, i}, g.Pos()})
			}
		}
	}
}

// isStoreTarget reports whether the index expression ix is written to
// (m[k] = v, m[k] op= v, m[k]++) in its parent stmt.
func isStoreTarget(ix *ast.IndexExpr, stmt ast.Node) bool {
	switch s := stmt.(type) {
	case *ast.AssignStmt:
		for _, l := range s.Lhs {
			if ast.Unparen(l) == ix {
				return true
			}
		}
	case *ast.IncDecStmt:
		return ast.Unparen(s.X) == ix
	}
	return false
}

func appendPos(ps []token.Pos, p token.Pos) []token.Pos {
	if len(ps) >= maxDerefs {
		return ps
	}
	for _, q := range ps {
		if q == p {
			return ps
		}
	}
	return append(ps, p)
}

// solve propagates dereferences backwards along the copies until nothing
// changes: a node reaches what the nodes it is copied into reach (if
// they are not guarded by a nil check, for nil dereferences), and
// remembers the copies' positions.
func (f *flow) solve() {
	f.done = map[flowNode]*reach{}
	for n, r := range f.nodes {
		d := &reach{chanOp: r.chanOp, closes: r.closes, checked: r.checked, exported: r.exported}
		d.nilDeref = (r.nilDeref || r.exported) && !r.checked
		d.lines = append([]token.Pos(nil), r.lines...)
		f.done[n] = d
	}
	for changed := true; changed; {
		changed = false
		for n, r := range f.nodes {
			d := f.done[n]
			for _, e := range r.next {
				t := f.done[e.to]
				if t == nil {
					continue
				}
				gain := false
				if t.nilDeref && !d.nilDeref && !r.checked {
					d.nilDeref, gain = true, true
				}
				if t.chanOp && !d.chanOp {
					d.chanOp, gain = true, true
				}
				if t.closes && !d.closes {
					d.closes, gain = true, true
				}
				if t.nilDeref && !r.checked || t.chanOp {
					before := len(d.lines)
					d.lines = appendPos(d.lines, e.pos)
					for _, p := range t.lines {
						d.lines = appendPos(d.lines, p)
					}
					if len(d.lines) != before {
						gain = true
					}
				}
				changed = changed || gain
			}
		}
	}
}

// reaches reports whether the value of node n can reach a dereference
// that a stale value makes panic, and the lines of those dereferences.
func (f *flow) reaches(n flowNode) (bool, []token.Pos) {
	if f == nil || n == nil {
		return false, nil
	}
	d := f.done[n]
	if d == nil || !(d.nilDeref || d.chanOp) {
		return false, nil
	}
	return true, d.lines
}

// sendsOnly reports whether the value of node n reaches only channel sends
// (no dereference, no close): a map entry's lookup into it is no load, as
// a nil channel from a deleted entry blocks the send instead of panicking
// (entries.go).
func (f *flow) sendsOnly(n flowNode) bool {
	d := f.done[n]
	return d != nil && d.chanOp && !d.closes && !d.nilDeref
}

// derefLines turns positions into the site table's lines, sorted, without
// the site's own line.
func derefLines(fset *token.FileSet, site sites.Site, ps []token.Pos) []sites.Ref {
	seen := map[sites.Ref]bool{}
	var out []sites.Ref
	for _, p := range ps {
		pos := fset.Position(p)
		ref := sites.Ref{File: pos.Filename, Line: pos.Line}
		if ref.File == site.File && ref.Line == site.Line || seen[ref] {
			continue
		}
		seen[ref] = true
		out = append(out, ref)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out
}

// ---- collection of loads (called from collect.go) ----

// loadAssign records the loads of L1, L2 := R1, R2 (and =, and var
// declarations) whose value reaches a dereference through the local.
func (c *collector) loadAssign(lhs []ast.Expr, names []*ast.Ident, rhs []ast.Expr) {
	if c.flow == nil {
		return
	}
	n := len(lhs)
	if names != nil {
		n = len(names)
	}
	if n != len(rhs) {
		return
	}
	for i, r := range rhs {
		var w *types.Var
		if names != nil {
			w, _ = c.info.Defs[names[i]].(*types.Var)
		} else {
			w = c.flow.localVar(lhs[i])
		}
		if w == nil {
			continue
		}
		c.loadOf(r, w)
	}
}

// loadArgs records the loads passed as arguments to a function of the
// package whose parameter reaches a dereference.
func (c *collector) loadArgs(call *ast.CallExpr) {
	if c.flow == nil {
		return
	}
	callee := c.flow.calleeFunc(call)
	if callee == nil {
		return
	}
	for i, a := range call.Args {
		if pv := paramNode(callee, i); pv != nil {
			c.loadOf(a, pv)
		}
	}
}

// loadRecv records the load of x in x.M(…) (or the method value x.M)
// when M is a value-receiver method of the package on x's named map,
// channel or func type whose receiver reaches a dereference: the
// receiver is an argument (`c.subs.add(k, v)` with `func (cs chanSet)
// add(…) { cs[k] = v }`).
func (c *collector) loadRecv(n *ast.SelectorExpr) {
	if c.flow == nil {
		return
	}
	if rv := c.flow.recvNode(n); rv != nil {
		c.loadOf(n.X, rv)
	}
}

// loadReturn records the loads returned by fn when its result reaches a
// dereference (in a caller of the package, or fn is exported).
func (c *collector) loadReturn(ret *ast.ReturnStmt) {
	if c.flow == nil || c.decl == nil || len(c.funcs) != 1 {
		return
	}
	for i, r := range ret.Results {
		c.loadOf(r, resultNode{c.decl, i})
	}
}

// loadOf records a load site at e when e is a slot (or an atomic Load)
// whose value goes into node n, and n reaches a dereference.
func (c *collector) loadOf(e ast.Expr, n flowNode) {
	ok, lines := c.flow.reaches(n)
	if !ok {
		return
	}
	e = ast.Unparen(e)
	c.derefs = lines // for the site made below
	defer func() { c.derefs = nil }()
	if c.slot(e) {
		if c.ed.has(e, actUse) {
			return
		}
		id := c.site("load", e, e)
		c.ed.add(e, action{kind: actUse, site: id})
		return
	}
	if _, ok := c.entry(e); ok && c.flow.sendsOnly(n) {
		return // a nil channel from a deleted entry blocks the send (entries.go)
	}
	if c.entryUse(e, "load") { // entries.go
		return
	}
	c.atomicLoad(e)
}

// rangeLoad records the load of the ranged slot of for k, v := range X:
// over a func value (range-over-func calls it: a nil func panics) and
// over a pointer to an array with a value variable (each element reads
// through the pointer) it is a use; over a map or a channel it is a load
// when the key or the value reaches a dereference, like a load into a
// local. The event is written once, where X is evaluated, not per
// iteration. A slice is not a slot (its elements are, and ranging reads
// them without a hook).
func (c *collector) rangeLoad(n *ast.RangeStmt) {
	x := ast.Unparen(n.X)
	if !c.slot(x) || c.ed.has(x, actUse) {
		return
	}
	switch refKind(typeOf(c.info, x)) {
	case "func":
		c.use(x)
	case "pointer":
		if n.Value != nil && !isBlankIdent(n.Value) {
			c.use(x)
		}
	case "map", "chan":
		if c.flow == nil {
			return
		}
		var lines []token.Pos
		reached := false
		for _, e := range []ast.Expr{n.Key, n.Value} {
			if e == nil || isBlankIdent(e) {
				continue
			}
			var v *types.Var
			if id, ok := e.(*ast.Ident); ok && n.Tok == token.DEFINE {
				v, _ = c.info.Defs[id].(*types.Var)
			} else {
				v = c.flow.localVar(e)
			}
			if ok, l := c.flow.reaches(v); ok {
				reached = true
				lines = append(lines, l...)
			}
		}
		if !reached {
			return
		}
		c.derefs = lines
		id := c.site("load", x, x)
		c.derefs = nil
		c.ed.add(x, action{kind: actUse, site: id})
	}
}

func isBlankIdent(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && id.Name == "_"
}
