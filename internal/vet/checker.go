package vet

import (
	"go/token"
	"go/types"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/ssa"
)

const tokenMUL = token.MUL

// Bounds of the interprocedural walks: the call graph is the package's, and
// every walk over it stops here.
const (
	maxReachDepth = 8   // calls followed from a goroutine's function
	maxReach      = 400 // functions a goroutine may run
	maxSummary    = 3   // callee levels a summary (deref, init, wait) looks into
)

// checker holds one package's SSA and what the rules share.
type checker struct {
	pass *analysis.Pass
	pkg  *ssa.Package

	funcs        []*ssa.Function // the package's functions with bodies, closures and wrappers included
	inPkg        map[*ssa.Function]bool
	closures     map[*ssa.Function][]*ssa.MakeClosure // where each closure is made
	addrTaken    map[*ssa.Function]bool               // used as a value other than by a go/defer/call
	ifaceMethods map[string]bool                      // method names of the package's interfaces
	callees      map[ssa.CallInstruction][]*ssa.Function
	callers      map[*ssa.Function][]ssa.CallInstruction // Call and Defer sites, and Go sites

	info map[*ssa.Function]*funcInfo

	spawns   []*spawn
	spawnsAt map[ssa.Instruction]*spawn
	ext      map[*ssa.Function]bool // may be called from outside the package (or by a test)

	memoDeref  map[derefKey]derefMemo
	memoInits  map[initKey]map[key]initSite
	memoWaits  map[*ssa.Function]map[key]bool
	memoSignal map[*ssa.Function]map[key]bool
	memoSpawn  map[*ssa.Function][]*spawn
	memoJoined map[*spawn]*wait
	entryLocks map[*ssa.Function]lockset
	starts     map[token.Pos]token.Pos // exprStart's index
	hints      []*hint
	disposed   map[key]bool // slots some store sets to nil
}

func newChecker(pass *analysis.Pass, pkg *ssa.Package, src []*ssa.Function) *checker {
	c := &checker{
		pass:         pass,
		pkg:          pkg,
		inPkg:        map[*ssa.Function]bool{},
		closures:     map[*ssa.Function][]*ssa.MakeClosure{},
		addrTaken:    map[*ssa.Function]bool{},
		ifaceMethods: map[string]bool{},
		callees:      map[ssa.CallInstruction][]*ssa.Function{},
		callers:      map[*ssa.Function][]ssa.CallInstruction{},
		info:         map[*ssa.Function]*funcInfo{},
		spawnsAt:     map[ssa.Instruction]*spawn{},
		ext:          map[*ssa.Function]bool{},
		memoDeref:    map[derefKey]derefMemo{},
		memoInits:    map[initKey]map[key]initSite{},
		memoWaits:    map[*ssa.Function]map[key]bool{},
		memoSignal:   map[*ssa.Function]map[key]bool{},
		memoSpawn:    map[*ssa.Function][]*spawn{},
		memoJoined:   map[*spawn]*wait{},
	}
	// The package's functions: source functions with their closures, and
	// the wrappers (bound methods) their instructions mention.
	var add func(fn *ssa.Function)
	add = func(fn *ssa.Function) {
		if fn == nil || c.inPkg[fn] || fn.Blocks == nil {
			return
		}
		if fn.Pkg != pkg && fn.Synthetic == "" {
			return
		}
		c.inPkg[fn] = true
		c.funcs = append(c.funcs, fn)
		for _, anon := range fn.AnonFuncs {
			add(anon)
		}
	}
	for _, fn := range src {
		add(fn)
	}
	for i := 0; i < len(c.funcs); i++ {
		fn := c.funcs[i]
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				if mc, ok := in.(*ssa.MakeClosure); ok {
					add(mc.Fn.(*ssa.Function))
				}
				if call, ok := in.(ssa.CallInstruction); ok {
					if callee := call.Common().StaticCallee(); callee != nil {
						add(unbound(callee))
					}
				}
			}
		}
	}
	for _, m := range pkg.Members {
		if t, ok := m.(*ssa.Type); ok {
			if it, ok := t.Type().Underlying().(*types.Interface); ok {
				for i := 0; i < it.NumMethods(); i++ {
					c.ifaceMethods[it.Method(i).Name()] = true
				}
			}
		}
	}
	c.buildCallGraph()
	c.findSpawns()
	c.findExternal()
	c.computeEntryLocks()
	return c
}

// buildCallGraph resolves every call site of the package's functions to the
// package's functions it may call.
func (c *checker) buildCallGraph() {
	// Closures: where they are made, and whether they escape other than
	// into a call or go statement that runs them.
	for _, fn := range c.funcs {
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				switch in := in.(type) {
				case *ssa.MakeClosure:
					cl := in.Fn.(*ssa.Function)
					c.closures[cl] = append(c.closures[cl], in)
					if !onlyCalled(in) {
						c.addrTaken[cl] = true
						c.addrTaken[unbound(cl)] = true // x.M as a value
					}
					continue
				}
				for _, op := range in.Operands(nil) {
					if f, ok := (*op).(*ssa.Function); ok {
						if call, ok := in.(ssa.CallInstruction); ok && call.Common().Value == f {
							continue
						}
						c.addrTaken[f] = true
					}
				}
			}
		}
	}
	var cg *callgraph.Graph
	dynamic := false
	for _, fn := range c.funcs {
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				if call, ok := in.(ssa.CallInstruction); ok && call.Common().StaticCallee() == nil {
					if _, builtin := call.Common().Value.(*ssa.Builtin); !builtin {
						dynamic = true
					}
				}
			}
		}
	}
	if dynamic {
		cg = c.vta()
	}
	// vtaCallees returns what the call graph resolves a site to.
	vtaCallees := func(fn *ssa.Function, call ssa.CallInstruction) []*ssa.Function {
		var out []*ssa.Function
		if n := cg.Nodes[fn]; n != nil {
			for _, e := range n.Out {
				if e.Site == call {
					out = append(out, e.Callee.Func)
				}
			}
		}
		return out
	}
	for _, fn := range c.funcs {
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				call, ok := in.(ssa.CallInstruction)
				if !ok {
					continue
				}
				var targets []*ssa.Function
				common := call.Common()
				switch {
				case common.StaticCallee() != nil:
					targets = []*ssa.Function{unbound(common.StaticCallee())}
				case common.IsInvoke():
					targets = c.implementations(common)
					if cg != nil && !generic(fn) {
						// Only the package's types whose values flow to the
						// receiver: a method of a type that never reaches
						// this interface value is not called here.
						targets = intersect(targets, vtaCallees(fn, call))
					}
				default:
					if mc, ok := common.Value.(*ssa.MakeClosure); ok {
						targets = []*ssa.Function{mc.Fn.(*ssa.Function)}
					} else if cg != nil {
						targets = vtaCallees(fn, call)
					}
				}
				// The call graph's edges come in map order: sort them.
				sort.SliceStable(targets, func(i, j int) bool { return targets[i].Pos() < targets[j].Pos() })
				for _, t := range targets {
					t = unbound(t)
					if !c.inPkg[t] {
						continue
					}
					c.callees[call] = append(c.callees[call], t)
					c.callers[t] = append(c.callers[t], call)
				}
			}
		}
	}
}

// onlyCalled reports whether a closure value is only called, deferred or
// started, not stored or passed on.
func onlyCalled(mc *ssa.MakeClosure) bool {
	refs := mc.Referrers()
	if refs == nil {
		return false
	}
	for _, r := range *refs {
		switch r := r.(type) {
		case ssa.CallInstruction:
			if r.Common().Value != mc {
				return false
			}
		case *ssa.MakeClosure:
			// Captured by another closure of the package, which calls it
			// (the call graph has those calls).
		default:
			return false
		}
	}
	return true
}

// unbound maps a bound-method wrapper (x.M as a value) to the method, and
// an instance of a generic function (built as a wrapper that calls the
// generic body) to that body.
func unbound(fn *ssa.Function) *ssa.Function {
	if o := fn.Origin(); o != nil && o != fn {
		fn = o
	}
	if fn.Synthetic != "" && strings.HasSuffix(fn.Name(), "$bound") {
		if obj, ok := fn.Object().(*types.Func); ok {
			if m := fn.Prog.FuncValue(obj); m != nil {
				return m
			}
		}
	}
	return fn
}

// implementations returns the package's methods an interface call may
// reach: methods of the name on the package's named types that implement
// the interface.
func (c *checker) implementations(common *ssa.CallCommon) []*ssa.Function {
	iface, ok := common.Value.Type().Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	var out []*ssa.Function
	for _, m := range c.pkg.Members {
		t, ok := m.(*ssa.Type)
		if !ok {
			continue
		}
		for _, typ := range []types.Type{t.Type(), types.NewPointer(t.Type())} {
			if _, isIface := typ.Underlying().(*types.Interface); isIface {
				continue
			}
			if !types.Implements(typ, iface) {
				continue
			}
			sel := c.pkg.Prog.MethodSets.MethodSet(typ).Lookup(common.Method.Pkg(), common.Method.Name())
			if sel == nil {
				continue
			}
			if f := c.pkg.Prog.MethodValue(sel); f != nil {
				out = append(out, f)
			}
			break
		}
	}
	return out
}

// findExternal marks the functions code outside the package (or a test)
// may call: exported functions and methods, init, main, and what they call
// without starting a goroutine. A closure nobody is known to call runs
// where it is made.
func (c *checker) findExternal() {
	var work []*ssa.Function
	mark := func(fn *ssa.Function) {
		if !c.ext[fn] {
			c.ext[fn] = true
			work = append(work, fn)
		}
	}
	for _, fn := range c.funcs {
		if fn.Parent() != nil || fn.Synthetic != "" {
			continue
		}
		name := fn.Name()
		if token.IsExported(name) || name == "main" || strings.HasPrefix(name, "init") {
			mark(fn)
		}
		if c.addrTaken[fn] && len(c.callers[fn]) == 0 {
			// Handed to code outside the package.
			mark(fn)
		}
	}
	for len(work) > 0 {
		fn := work[0]
		work = work[1:]
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				switch in := in.(type) {
				case *ssa.Go:
					continue
				case ssa.CallInstruction:
					if c.spawnsAt[in] != nil {
						continue
					}
					for _, t := range c.callees[in] {
						mark(t)
					}
				case *ssa.MakeClosure:
					cl := in.Fn.(*ssa.Function)
					if cl.Parent() != nil && len(c.callers[cl]) == 0 && !c.spawnedClosure(cl) && c.runsInline(in) {
						// Called by code the analyzer does not see, on this
						// goroutine as far as it knows (sort.Slice, Once.Do).
						mark(cl)
					}
				}
			}
		}
	}
}

func (c *checker) spawnedClosure(fn *ssa.Function) bool {
	for _, s := range c.spawns {
		for _, r := range s.roots {
			if r == fn {
				return true
			}
		}
	}
	return false
}

// funcName is how messages name a function: (*server).close, Dial, the
// func literal in Start.
func (c *checker) funcName(fn *ssa.Function) string {
	if fn.Parent() != nil {
		root := fn
		for root.Parent() != nil {
			root = root.Parent()
		}
		return "the func literal in " + c.funcName(root)
	}
	return fn.RelString(c.pkg.Pkg)
}

// posString is a short position: file.go:12.
func (c *checker) posString(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	if !p.IsValid() {
		return "?"
	}
	return baseName(p.Filename) + ":" + itoa(p.Line)
}

func baseName(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// vta runs variable type analysis over the package's non-generic functions
// (it wants instantiated generics, which buildssa does not make); a failure
// leaves func-value calls unresolved, which only loses hints.
func (c *checker) vta() (cg *callgraph.Graph) {
	funcs := map[*ssa.Function]bool{}
	for _, fn := range c.funcs {
		if !generic(fn) {
			funcs[fn] = true
		}
	}
	defer func() {
		if recover() != nil {
			cg = nil
		}
	}()
	return vta.CallGraph(funcs, nil)
}

func generic(fn *ssa.Function) bool {
	for ; fn != nil; fn = fn.Parent() {
		if fn.TypeParams().Len() > 0 || fn.TypeArgs() != nil {
			return true
		}
	}
	return false
}

// runsInline reports whether a closure the analyzer sees no call of is
// handed only to functions known to call it before they return
// (sync.Once.Do, sort.Slice): it runs on the goroutine that makes it. A
// closure handed to anything else (a scheduler, a callback registry of
// another package) runs the analyzer does not know where.
func (c *checker) runsInline(mc *ssa.MakeClosure) bool {
	refs := mc.Referrers()
	if refs == nil {
		return false
	}
	for _, r := range *refs {
		call, ok := r.(ssa.CallInstruction)
		if !ok {
			return false
		}
		common := call.Common()
		if common.Value == mc {
			continue
		}
		pkg, typ, name := calleeName(common)
		switch {
		case pkg == "sync" && typ == "Once" && name == "Do":
		case pkg == "sync" && typ == "Map" && name == "Range":
		case pkg == "sort" || pkg == "slices" || pkg == "maps" || pkg == "strings" || pkg == "bytes":
		default:
			return false
		}
	}
	return true
}

// intersect returns the functions of a that b has too, in a's order.
func intersect(a, b []*ssa.Function) []*ssa.Function {
	in := map[*ssa.Function]bool{}
	for _, f := range b {
		in[unbound(f)] = true
		in[f] = true
		// A method of T called through *T: the graph names the wrapper.
		if obj, ok := f.Object().(*types.Func); ok && f.Synthetic != "" {
			if m := f.Prog.FuncValue(obj); m != nil {
				in[m] = true
			}
		}
	}
	var out []*ssa.Function
	for _, f := range a {
		if in[f] || in[unbound(f)] {
			out = append(out, f)
		}
	}
	return out
}
