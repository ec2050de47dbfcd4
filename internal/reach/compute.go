package reach

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"

	"github.com/memorder/wafl/instrument"
	"github.com/memorder/wafl/instrument/sites"
)

// Options bound the computation.
type Options struct {
	// Depth is the number of calls followed from a root (DefaultDepth).
	Depth int
	// MaxFuncs bounds the functions of one reach file (DefaultMaxFuncs);
	// beyond it the file is marked Truncated.
	MaxFuncs int
}

// DefaultMaxFuncs is the default Options.MaxFuncs.
const DefaultMaxFuncs = 20000

// maxImpls bounds the implementations an interface call reaches: a call
// through an interface that two hundred types implement says nothing.
const maxImpls = 16

// Program is the SSA form of the instrumented packages with the site
// table mapped onto their functions. It answers reach files per test
// binary (File). Not safe for concurrent use.
type Program struct {
	prog     *ssa.Program
	fset     *token.FileSet
	depth    int
	maxFuncs int
	source   map[*types.Package]bool        // packages built from syntax
	sites    map[*ssa.Function][]uint32     // a function's own sites
	goSites  map[posKey]uint32              // go statement sites by position
	infos    map[*ssa.Function]*funcInfo    // callees, memoized
	concrete []types.Type                   // receiver types for interface calls
	impls    map[string][]*ssa.Function     // interface method -> implementations
	names    map[*ssa.Function]string       // cached names
	pkgs     map[string][]*packages.Package // syntax packages by import path (variants)
}

type posKey struct {
	file      string
	line, col int
}

// funcInfo is what a function leads to: the functions it calls, defers,
// creates or hands over, the functions its go statements start, and its
// go statements.
type funcInfo struct {
	calls  []*ssa.Function
	starts []*ssa.Function
	gos    []goStmt
}

type goStmt struct {
	site    uint32
	entries []*ssa.Function
}

// New builds the SSA form of pkgs — the type-checked packages with
// syntax that the build instruments (test variants included) — and maps
// the sites of table onto their functions. Packages with errors are left
// out. The SSA builder's panics on code it cannot handle become an error.
func New(pkgs []*packages.Package, table []sites.Site, opts Options) (p *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("building SSA: %v", r)
		}
	}()
	p = &Program{
		depth: opts.Depth, maxFuncs: opts.MaxFuncs,
		source: map[*types.Package]bool{}, sites: map[*ssa.Function][]uint32{},
		goSites: map[posKey]uint32{}, infos: map[*ssa.Function]*funcInfo{},
		impls: map[string][]*ssa.Function{}, names: map[*ssa.Function]string{},
		pkgs: map[string][]*packages.Package{},
	}
	if p.depth <= 0 {
		p.depth = DefaultDepth
	}
	if p.maxFuncs <= 0 {
		p.maxFuncs = DefaultMaxFuncs
	}
	var good []*packages.Package
	for _, pkg := range pkgs {
		if pkg == nil || pkg.Types == nil || pkg.TypesInfo == nil || len(pkg.Syntax) == 0 || pkg.IllTyped || len(pkg.Errors) > 0 {
			continue
		}
		if pkg.Name == "main" && strings.HasSuffix(pkg.PkgPath, ".test") {
			continue // a generated test main
		}
		if p.source[pkg.Types] {
			continue
		}
		if p.fset == nil {
			p.fset = pkg.Fset
		}
		p.source[pkg.Types] = true
		good = append(good, pkg)
	}
	if len(good) == 0 {
		return p, nil
	}
	p.prog = ssa.NewProgram(p.fset, 0)
	var built []*ssa.Package
	for _, pkg := range good {
		built = append(built, p.prog.CreatePackage(pkg.Types, pkg.Syntax, pkg.TypesInfo, true))
		path := pkg.PkgPath
		if pkg.ForTest != "" {
			path = pkg.ForTest // p [p.test] and p_test [p.test] are p's test binary
		}
		p.pkgs[path] = append(p.pkgs[path], pkg)
	}
	// Their imports from type information only: the builder needs a
	// package for every package-level object the syntax refers to.
	created := map[*types.Package]bool{}
	var imports func(tp *types.Package)
	imports = func(tp *types.Package) {
		for _, imp := range tp.Imports() {
			if p.source[imp] || created[imp] {
				continue
			}
			created[imp] = true
			p.prog.CreatePackage(imp, nil, nil, true)
			imports(imp)
		}
	}
	for _, pkg := range good {
		imports(pkg.Types)
	}
	p.prog.Build()
	p.mapSites(built, table)
	for _, sp := range built {
		for _, m := range sp.Members {
			tn, ok := m.(*ssa.Type)
			if !ok {
				continue
			}
			t := tn.Type()
			if _, isIface := t.Underlying().(*types.Interface); isIface {
				continue
			}
			if n, ok := t.(*types.Named); ok && n.TypeParams().Len() > 0 {
				continue
			}
			p.concrete = append(p.concrete, t, types.NewPointer(t))
		}
	}
	return p, nil
}

// mapSites gives every site of the table (but go statements) to the
// innermost source function containing it, and indexes the go
// statements by position.
func (p *Program) mapSites(built []*ssa.Package, table []sites.Site) {
	type span struct {
		fn         *ssa.Function
		start, end posKey
	}
	byFile := map[string][]span{}
	var add func(fn *ssa.Function)
	add = func(fn *ssa.Function) {
		if fn == nil {
			return
		}
		if syn := fn.Syntax(); syn != nil {
			s, e := p.fset.Position(syn.Pos()), p.fset.Position(syn.End())
			byFile[s.Filename] = append(byFile[s.Filename], span{fn, posKey{s.Filename, s.Line, s.Column}, posKey{e.Filename, e.Line, e.Column}})
		}
		for _, a := range fn.AnonFuncs {
			add(a)
		}
	}
	for _, sp := range built {
		for _, m := range sp.Members {
			switch m := m.(type) {
			case *ssa.Function:
				add(m)
			case *ssa.Type:
				if n, ok := m.Type().(*types.Named); ok {
					for i := range n.NumMethods() {
						add(p.prog.FuncValue(n.Method(i)))
					}
				}
			}
		}
	}
	before := func(a, b posKey) bool { return a.line < b.line || a.line == b.line && a.col <= b.col }
	for _, s := range table {
		k := posKey{s.File, s.Line, s.Col}
		if s.Kind == "go" {
			p.goSites[k] = s.ID
			continue
		}
		// The innermost function containing the site: the latest start;
		// test variants of one package give several functions the same
		// span, and each gets the site.
		var inner []span
		for _, sp := range byFile[s.File] {
			if !before(sp.start, k) || !before(k, sp.end) {
				continue
			}
			switch {
			case len(inner) == 0 || !before(sp.start, inner[0].start):
				inner = append(inner[:0], sp)
			case sp.start == inner[0].start && sp.end == inner[0].end:
				inner = append(inner, sp)
			}
		}
		for _, sp := range inner {
			p.sites[sp.fn] = append(p.sites[sp.fn], s.ID)
		}
	}
}

// node is the graph node of fn: the generic origin of an instance, the
// wrapped functions of a synthetic wrapper (promoted or bound methods,
// thunks), nothing for a function without a body here.
func (p *Program) nodes(fn *ssa.Function, out []*ssa.Function, hops int) []*ssa.Function {
	if fn == nil {
		return out
	}
	if o := fn.Origin(); o != nil {
		fn = o
	}
	if fn.Syntax() != nil && fn.Pkg != nil && p.source[fn.Pkg.Pkg] {
		return append(out, fn)
	}
	if fn.Synthetic == "" || len(fn.Blocks) == 0 || hops > 2 {
		return out
	}
	for _, b := range fn.Blocks {
		for _, in := range b.Instrs {
			if c, ok := in.(ssa.CallInstruction); ok {
				out = p.nodes(c.Common().StaticCallee(), out, hops+1)
			}
		}
	}
	return out
}

// info returns what fn leads to (memoized).
func (p *Program) info(fn *ssa.Function) *funcInfo {
	if in, ok := p.infos[fn]; ok {
		return in
	}
	in := &funcInfo{}
	p.infos[fn] = in
	seen := map[*ssa.Function]bool{}
	edge := func(fs []*ssa.Function) {
		for _, f := range fs {
			if !seen[f] {
				seen[f] = true
				in.calls = append(in.calls, f)
			}
		}
	}
	started := map[*ssa.Function]bool{}
	var rands []*ssa.Value
	for _, b := range fn.Blocks {
		for _, instr := range b.Instrs {
			var callee ssa.Value
			if c, ok := instr.(ssa.CallInstruction); ok {
				com := c.Common()
				callee = com.Value
				targets := p.callees(com)
				if g, ok := instr.(*ssa.Go); ok {
					for _, t := range targets {
						if !started[t] {
							started[t] = true
							in.starts = append(in.starts, t)
						}
					}
					pos := p.fset.Position(g.Pos())
					if site, ok := p.goSites[posKey{pos.Filename, pos.Line, pos.Column}]; ok {
						in.gos = append(in.gos, goStmt{site: site, entries: targets})
					}
				} else {
					edge(targets)
				}
			}
			// A function value created or referenced here (a closure, a
			// method value, a function handed to another package)
			// counts as called from here, unless it is only started by
			// go statements.
			if mc, ok := instr.(*ssa.MakeClosure); ok {
				if !onlyStarted(mc) {
					edge(p.nodes(mc.Fn.(*ssa.Function), nil, 0))
				}
				continue
			}
			rands = instr.Operands(rands[:0])
			for _, r := range rands {
				if r == nil || *r == nil || *r == callee {
					continue
				}
				if f, ok := (*r).(*ssa.Function); ok {
					edge(p.nodes(f, nil, 0))
				}
			}
		}
	}
	return in
}

// onlyStarted reports whether the closure is used only as the function
// of go statements.
func onlyStarted(mc *ssa.MakeClosure) bool {
	refs := mc.Referrers()
	if refs == nil || len(*refs) == 0 {
		return false
	}
	for _, r := range *refs {
		g, ok := r.(*ssa.Go)
		if !ok || g.Call.Value != mc {
			return false
		}
	}
	return true
}

// callees resolves a call: its static callee, or for a call through an
// interface the instrumented types' implementations (class hierarchy
// analysis, at most maxImpls). A call of a func value resolves to
// nothing: the value's creation was an edge already.
func (p *Program) callees(com *ssa.CallCommon) []*ssa.Function {
	if f := com.StaticCallee(); f != nil {
		return p.nodes(f, nil, 0)
	}
	if !com.IsInvoke() {
		return nil
	}
	t := com.Value.Type()
	if _, ok := t.(*types.TypeParam); ok {
		return nil
	}
	iface, ok := t.Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	key := types.TypeString(t, nil) + "\x00" + com.Method.Id()
	if fs, ok := p.impls[key]; ok {
		return fs
	}
	var fs []*ssa.Function
	for _, c := range p.concrete {
		if !types.Implements(c, iface) {
			continue
		}
		sel := p.prog.MethodSets.MethodSet(c).Lookup(com.Method.Pkg(), com.Method.Name())
		if sel == nil {
			continue
		}
		fs = p.nodes(p.prog.MethodValue(sel), fs, 0)
		if len(fs) > maxImpls {
			fs = nil
			break
		}
	}
	slices.SortFunc(fs, func(a, b *ssa.Function) int { return cmp.Compare(a.Pos(), b.Pos()) })
	fs = slices.Compact(fs)
	p.impls[key] = fs
	return fs
}

// File computes the reach file of the test binary of the package at
// import path pkgPath: from its top-level Test functions (in its test
// variants' _test.go files), and from every go statement found on the
// way, Depth calls deep.
func (p *Program) File(pkgPath string) (f *File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("reach of %s: %v", pkgPath, r)
		}
	}()
	f = &File{Version: Version, Package: pkgPath, Depth: p.depth, Tests: map[string][]int{}}
	if p.prog == nil {
		return f, nil
	}
	idx := map[*ssa.Function]int{}
	var order []*ssa.Function
	best := map[*ssa.Function]int{}
	node := func(fn *ssa.Function) (int, bool) {
		if i, ok := idx[fn]; ok {
			return i, true
		}
		if len(order) >= p.maxFuncs {
			f.Truncated = true
			return 0, false
		}
		idx[fn] = len(order)
		order = append(order, fn)
		return len(order) - 1, true
	}
	type item struct {
		fn *ssa.Function
		d  int
	}
	var q []item
	push := func(fn *ssa.Function, d int) bool {
		if _, ok := node(fn); !ok {
			return false
		}
		if b, ok := best[fn]; ok && b <= d {
			return true
		}
		best[fn] = d
		q = append(q, item{fn, d})
		return true
	}
	for _, pkg := range p.pkgs[pkgPath] {
		for _, fn := range testFuncs(p.prog, pkg) {
			if push(fn, 0) {
				name := fn.Name()
				f.Tests[name] = append(f.Tests[name], idx[fn])
			}
		}
	}
	gos := map[uint32][]int{}
	for len(q) > 0 {
		it := q[0]
		q = q[1:]
		if best[it.fn] < it.d {
			continue // improved since
		}
		in := p.info(it.fn)
		for _, g := range in.gos {
			if _, done := gos[g.site]; done {
				continue
			}
			var roots []int
			for _, e := range g.entries {
				if push(e, 0) {
					roots = append(roots, idx[e])
				}
			}
			gos[g.site] = roots
		}
		if it.d >= p.depth {
			continue
		}
		for _, c := range in.calls {
			push(c, it.d+1)
		}
		for _, c := range in.starts {
			push(c, it.d+1)
		}
	}
	f.Funcs = make([]Func, len(order))
	for i, fn := range order {
		fi := Func{Name: p.name(fn), Sites: slices.Clone(p.sites[fn])}
		slices.Sort(fi.Sites)
		fi.Sites = slices.Compact(fi.Sites)
		if best[fn] < p.depth {
			in := p.info(fn)
			for _, c := range in.calls {
				if j, ok := idx[c]; ok {
					fi.Calls = append(fi.Calls, j)
				}
			}
			for _, c := range in.starts {
				if j, ok := idx[c]; ok {
					fi.Starts = append(fi.Starts, j)
				}
			}
		}
		f.Funcs[i] = fi
	}
	if len(gos) > 0 {
		f.Gos = make(map[string][]int, len(gos))
		for s, r := range gos {
			if len(r) > 0 {
				f.Gos[strconv.FormatUint(uint64(s), 10)] = r
			}
		}
	}
	return f, nil
}

func (p *Program) name(fn *ssa.Function) string {
	if n, ok := p.names[fn]; ok {
		return n
	}
	n := fn.String()
	p.names[fn] = n
	return n
}

// testFuncs returns the SSA functions of the top-level tests declared in
// pkg's _test.go files: func TestXxx(t *testing.T), as go test runs them.
func testFuncs(prog *ssa.Program, pkg *packages.Package) []*ssa.Function {
	var out []*ssa.Function
	for _, file := range pkg.Syntax {
		if !strings.HasSuffix(pkg.Fset.Position(file.Pos()).Filename, "_test.go") {
			continue
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Type.TypeParams != nil || len(fd.Type.Params.List) != 1 || !instrument.IsTestName(fd.Name.Name) {
				continue
			}
			obj, ok := pkg.TypesInfo.Defs[fd.Name].(*types.Func)
			if !ok {
				continue
			}
			if fn := prog.FuncValue(obj); fn != nil {
				out = append(out, fn)
			}
		}
	}
	return out
}
