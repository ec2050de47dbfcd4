package vet

import (
	"go/token"
	"sort"

	"golang.org/x/tools/go/ssa"
)

// A spawn is where a goroutine starts running the package's code: a go
// statement, or a func value handed to an API that runs it on another
// goroutine (time.AfterFunc, context.AfterFunc, WaitGroup.Go, errgroup).
type spawn struct {
	at    ssa.Instruction
	fn    *ssa.Function   // the function containing at
	roots []*ssa.Function // what the goroutine runs
	// reach maps every function the goroutine may run to the
	// instructions of a root through which it is reached (nil for a root).
	reach map[*ssa.Function][]ssa.Instruction
	loop  bool // at is in a loop: several such goroutines may run
	// override replaces the callees of calls in the roots: what a spawn
	// helper's wrapper calls at this call of the helper.
	override map[ssa.Instruction][]*ssa.Function
}

// asyncFuncArg returns the index of the argument that an API runs on
// another goroutine, or -1.
func asyncFuncArg(common *ssa.CallCommon) int {
	pkg, typ, name := calleeName(common)
	switch {
	case pkg == "time" && typ == "" && name == "AfterFunc":
		return 1
	case pkg == "context" && typ == "" && name == "AfterFunc":
		return 1
	case pkg == "sync" && typ == "WaitGroup" && name == "Go":
		return 1
	case pkg == "golang.org/x/sync/errgroup" && typ == "Group" && (name == "Go" || name == "TryGo"):
		return 1
	}
	return -1
}

func (c *checker) findSpawns() {
	for _, fn := range c.funcs {
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				var fv ssa.Value
				var roots []*ssa.Function
				switch in := in.(type) {
				case *ssa.Go:
					fv = in.Common().Value
					roots = c.callees[in]
				case *ssa.Call:
					i := asyncFuncArg(in.Common())
					if i < 0 || i >= len(in.Common().Args) {
						continue
					}
					fv = in.Common().Args[i]
					roots = c.funcValues(fv)
				default:
					continue
				}
				if c.helperSpawns(fn, in, fv) {
					continue
				}
				if len(roots) == 0 {
					continue
				}
				sp := &spawn{at: in, fn: fn, roots: roots, loop: inLoop(b)}
				if g, ok := in.(*ssa.Go); ok {
					sp.override = c.paramCalls(g.Common(), roots)
				}
				c.addSpawn(sp)
			}
		}
	}
	for _, s := range c.spawns {
		s.reach = c.reachFrom(s.roots, s.override)
	}
}

func (c *checker) addSpawn(s *spawn) {
	c.spawns = append(c.spawns, s)
	c.spawnsAt[s.at] = s
}

// helperSpawns handles a go statement that runs a func value its function
// h was given — func (r *Raft) goFunc(f func()) { go func() { defer
// wg.Done(); f() }() }: the goroutine starts at each call of h and runs
// what that call passes, not every func value passed to h anywhere.
func (c *checker) helperSpawns(h *ssa.Function, at ssa.Instruction, fv ssa.Value) bool {
	param := -1
	var inner ssa.CallInstruction // the wrapper closure's call of the parameter
	var wrapper *ssa.Function
	paramIndex := func(v ssa.Value) int {
		for i, p := range h.Params {
			if p == v {
				return i
			}
		}
		return -1
	}
	switch v := fv.(type) {
	case *ssa.Parameter:
		param = paramIndex(v)
	case *ssa.MakeClosure:
		wrapper = v.Fn.(*ssa.Function)
		for _, b := range wrapper.Blocks {
			for _, in := range b.Instrs {
				call, ok := in.(ssa.CallInstruction)
				if !ok {
					continue
				}
				cv := call.Common().Value
				if ld, ok := cv.(*ssa.UnOp); ok && ld.Op == token.MUL {
					cv = ld.X // a captured parameter lives in a cell
				}
				fvar, ok := cv.(*ssa.FreeVar)
				if !ok {
					continue
				}
				for i, f := range wrapper.FreeVars {
					if f != fvar || i >= len(v.Bindings) {
						continue
					}
					b := v.Bindings[i]
					if cell, ok := b.(*ssa.Alloc); ok {
						b = storedParam(cell)
					}
					if j := paramIndex(b); j >= 0 {
						param, inner = j, call
					}
				}
			}
		}
	}
	if param < 0 || h.Parent() != nil || len(c.callers[h]) == 0 {
		return false
	}
	for _, site := range c.callers[h] {
		call, ok := site.(*ssa.Call)
		if !ok || param >= len(call.Common().Args) {
			continue
		}
		funcs := c.funcValues(call.Common().Args[param])
		s := &spawn{at: call, fn: call.Parent(), loop: inLoop(call.Block())}
		if inner == nil {
			s.roots = funcs
		} else {
			s.roots = []*ssa.Function{wrapper}
			s.override = map[ssa.Instruction][]*ssa.Function{inner: funcs}
		}
		if len(s.roots) > 0 {
			c.addSpawn(s)
		}
	}
	if c.ext[h] || token.IsExported(h.Name()) {
		// Callers outside the package start it too, with funcs the
		// analyzer does not know.
		s := &spawn{at: at, fn: h, loop: inLoop(at.Block())}
		if inner != nil {
			s.roots = []*ssa.Function{wrapper}
			s.override = map[ssa.Instruction][]*ssa.Function{inner: nil}
			c.addSpawn(s)
		}
	}
	return true
}

// funcValues returns the package's functions a func value may be.
func (c *checker) funcValues(v ssa.Value) []*ssa.Function {
	var out []*ssa.Function
	for _, o := range c.origins(v) {
		switch o := o.(type) {
		case *ssa.MakeClosure:
			out = append(out, unbound(o.Fn.(*ssa.Function)))
		case *ssa.Function:
			if c.inPkg[o] {
				out = append(out, o)
			}
		}
	}
	var in []*ssa.Function
	for _, f := range out {
		if c.inPkg[f] {
			in = append(in, f)
		}
	}
	return in
}

// reachFrom returns the functions the roots may call, each with the root
// instructions through which it is reached; calls that start another
// goroutine are not followed.
func (c *checker) reachFrom(roots []*ssa.Function, override map[ssa.Instruction][]*ssa.Function) map[*ssa.Function][]ssa.Instruction {
	reach := map[*ssa.Function][]ssa.Instruction{}
	type item struct {
		fn    *ssa.Function
		via   ssa.Instruction
		depth int
	}
	var work []item
	for _, r := range roots {
		reach[r] = nil
		for _, b := range r.Blocks {
			for _, in := range b.Instrs {
				if mc, ok := in.(*ssa.MakeClosure); ok {
					cl := mc.Fn.(*ssa.Function)
					if cl.Parent() != nil && len(c.callers[cl]) == 0 && !c.spawnedClosure(cl) && c.runsInline(mc) {
						work = append(work, item{cl, in, 1})
					}
				}
				if call, ok := in.(ssa.CallInstruction); ok && c.spawnsAt[in] == nil {
					if _, isGo := in.(*ssa.Go); isGo {
						continue
					}
					targets, ok := override[in]
					if !ok {
						targets = c.callees[call]
					}
					for _, t := range targets {
						work = append(work, item{t, in, 1})
					}
				}
			}
		}
	}
	seen := map[[2]any]bool{}
	for len(work) > 0 && len(reach) < maxReach {
		it := work[0]
		work = work[1:]
		if seen[[2]any{it.fn, it.via}] {
			continue
		}
		seen[[2]any{it.fn, it.via}] = true
		_, known := reach[it.fn]
		isRoot := known && reach[it.fn] == nil
		if !isRoot {
			reach[it.fn] = append(reach[it.fn], it.via)
		}
		if known || it.depth >= maxReachDepth {
			continue
		}
		for _, b := range it.fn.Blocks {
			for _, in := range b.Instrs {
				// A closure handed to code the analyzer does not see
				// (sync.Once.Do, sort.Slice) runs where it is made.
				if mc, ok := in.(*ssa.MakeClosure); ok {
					cl := mc.Fn.(*ssa.Function)
					if cl.Parent() != nil && len(c.callers[cl]) == 0 && !c.spawnedClosure(cl) && c.runsInline(mc) {
						work = append(work, item{cl, it.via, it.depth + 1})
					}
				}
				if call, ok := in.(ssa.CallInstruction); ok && c.spawnsAt[in] == nil {
					if _, isGo := in.(*ssa.Go); isGo {
						continue
					}
					for _, t := range c.callees[call] {
						work = append(work, item{t, it.via, it.depth + 1})
					}
				}
			}
		}
	}
	return reach
}

// inLoop reports whether block b can reach itself.
func inLoop(b *ssa.BasicBlock) bool {
	seen := map[*ssa.BasicBlock]bool{}
	work := append([]*ssa.BasicBlock(nil), b.Succs...)
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		if x == b {
			return true
		}
		if seen[x] {
			continue
		}
		seen[x] = true
		work = append(work, x.Succs...)
	}
	return false
}

// startedBy returns the spawns a call instruction starts: itself if it is
// one, or those of the functions it calls, transitively (bounded).
func (c *checker) startedBy(in ssa.Instruction) []*spawn {
	if s := c.spawnsAt[in]; s != nil {
		return []*spawn{s}
	}
	call, ok := in.(*ssa.Call)
	if !ok {
		return nil
	}
	var out []*spawn
	for _, t := range c.callees[call] {
		out = append(out, c.spawnsIn(t, 0, map[*ssa.Function]bool{})...)
	}
	return out
}

func (c *checker) spawnsIn(fn *ssa.Function, depth int, seen map[*ssa.Function]bool) []*spawn {
	if depth == 0 {
		if s, ok := c.memoSpawn[fn]; ok {
			return s
		}
	}
	if seen[fn] || depth > maxSummary {
		return nil
	}
	seen[fn] = true
	var out []*spawn
	for _, b := range fn.Blocks {
		for _, in := range b.Instrs {
			if s := c.spawnsAt[in]; s != nil {
				out = append(out, s)
				continue
			}
			if call, ok := in.(*ssa.Call); ok {
				for _, t := range c.callees[call] {
					out = append(out, c.spawnsIn(t, depth+1, seen)...)
				}
			}
		}
	}
	if depth == 0 {
		c.memoSpawn[fn] = out
	}
	return out
}

// mustSignal returns what a call of fn signals: channels it closes or
// sends on, WaitGroups it calls Done on.
func (c *checker) mustSignal(fn *ssa.Function, depth int) map[key]bool {
	if m, ok := c.memoSignal[fn]; ok {
		return m
	}
	c.memoSignal[fn] = nil
	out := map[key]bool{}
	if depth <= maxSummary && len(fn.Blocks) > 0 {
		f := c.fi(fn)
		entry := fn.Blocks[0].Instrs[0]
		// Every signal of fn, not only those on every path: a reply after
		// early returns (if d.responded { return }) is the reply. More keys
		// can only remove hints.
		_ = entry
		for _, s := range f.signals {
			out[s.k] = true
		}
	}
	c.memoSignal[fn] = out
	return out
}

// mustWait returns what a call of fn waits for: a receive or Wait of fn
// on some path (a future's Error returns early once it has an answer).
// Taking every wait of the callee, not only those on every path, can only
// remove hints.
func (c *checker) mustWait(fn *ssa.Function, depth int) map[key]bool {
	if m, ok := c.memoWaits[fn]; ok {
		return m
	}
	c.memoWaits[fn] = nil
	out := map[key]bool{}
	if depth <= maxSummary && len(fn.Blocks) > 0 {
		f := c.fi(fn)
		entry := fn.Blocks[0].Instrs[0]
		_ = entry
		for _, w := range f.waits {
			out[w.k] = true
		}
	}
	c.memoWaits[fn] = out
	return out
}

// An initSite is an init a call of a function may make: the store, and
// the parameter of the function whose object it reaches (-1: a package
// variable or a captured one).
type initSite struct {
	at    ssa.Instruction
	param int
}

// mayInit returns the slots fn or the functions it calls (bounded) may
// store a non-nil value to, on objects fn's caller can see: reached from
// a parameter or a package variable, not made inside the call.
//
// A summary is memoized per function and depth: each call level looks one
// level deeper, so recursion ends at the depth bound, and what a call
// of fn may initialize does not depend on which caller asked first.
func (c *checker) mayInit(fn *ssa.Function, depth int) map[key]initSite {
	mk := initKey{fn, depth}
	if m, ok := c.memoInits[mk]; ok {
		return m
	}
	out := map[key]initSite{}
	put := func(k key, at ssa.Instruction, root ssa.Value) {
		if _, ok := out[k]; ok || k.local != nil {
			return
		}
		if p := paramIndex(fn, root); p >= 0 {
			out[k] = initSite{at, p}
			return
		}
		if _, ok := root.(*ssa.Global); ok {
			out[k] = initSite{at, -1}
		}
	}
	if depth <= maxSummary {
		f := c.fi(fn)
		for _, s := range f.stores {
			if !s.dispose && !s.fresh {
				put(s.k, s.at, rootOf(storeAddr(s.at)))
			}
		}
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				call, ok := in.(*ssa.Call)
				if !ok {
					continue
				}
				for _, t := range c.callees[call] {
					sub := c.mayInit(t, depth+1)
					for _, k := range sortedInits(sub) {
						is := sub[k]
						if is.param < 0 {
							put(k, is.at, nil)
							if _, ok := out[k]; !ok {
								out[k] = is
							}
						} else if is.param < len(call.Common().Args) {
							put(k, is.at, rootOf(call.Common().Args[is.param]))
						}
					}
				}
			}
		}
	}
	c.memoInits[mk] = out
	return out
}

type initKey struct {
	fn    *ssa.Function
	depth int
}

func paramIndex(fn *ssa.Function, v ssa.Value) int {
	for i, p := range fn.Params {
		if p == v {
			return i
		}
	}
	return -1
}

// rootOf follows an address or pointer back to the variable it starts
// from: s of s.a.b, p of *p.
func rootOf(v ssa.Value) ssa.Value {
	for i := 0; i < 8 && v != nil; i++ {
		switch x := v.(type) {
		case *ssa.FieldAddr:
			v = x.X
		case *ssa.Field:
			v = x.X
		case *ssa.IndexAddr:
			v = x.X
		case *ssa.UnOp:
			if x.Op != token.MUL {
				return v
			}
			v = x.X
		case *ssa.ChangeType:
			v = x.X
		default:
			return v
		}
	}
	return v
}

// existsBefore reports whether the object rooted at r exists when p
// executes: a parameter, a captured or package variable, or a value made
// before p on every path.
func (c *checker) existsBefore(f *funcInfo, r ssa.Value, p ssa.Instruction) bool {
	switch r := r.(type) {
	case *ssa.Parameter, *ssa.FreeVar, *ssa.Global:
		return true
	case ssa.Instruction:
		return r.Parent() == f.fn && f.dominates(r, p)
	}
	return false
}

// storedParam returns the parameter a captured parameter's cell holds:
// the only value stored to it.
func storedParam(cell *ssa.Alloc) ssa.Value {
	var v ssa.Value
	if refs := cell.Referrers(); refs != nil {
		for _, r := range *refs {
			if st, ok := r.(*ssa.Store); ok && st.Addr == cell {
				if v != nil && v != st.Val {
					return nil
				}
				v = st.Val
			}
		}
	}
	if _, ok := v.(*ssa.Parameter); ok {
		return v
	}
	return nil
}

// paramCalls handles go run(f): a function that calls its func-valued
// parameter (withRecover, safeGo) runs, on this goroutine, what this go
// statement passes, not every func value passed to it anywhere.
func (c *checker) paramCalls(common *ssa.CallCommon, roots []*ssa.Function) map[ssa.Instruction][]*ssa.Function {
	if len(roots) != 1 || common.StaticCallee() == nil {
		return nil
	}
	g := roots[0]
	var out map[ssa.Instruction][]*ssa.Function
	for _, b := range g.Blocks {
		for _, in := range b.Instrs {
			call, ok := in.(ssa.CallInstruction)
			if !ok {
				continue
			}
			v := call.Common().Value
			if ld, ok := v.(*ssa.UnOp); ok && ld.Op == token.MUL {
				if cell, ok := ld.X.(*ssa.Alloc); ok {
					v = storedParam(cell)
				}
			}
			i := paramIndex(g, v)
			if i < 0 || i >= len(common.Args) {
				continue
			}
			if out == nil {
				out = map[ssa.Instruction][]*ssa.Function{}
			}
			out[in] = c.funcValues(common.Args[i])
		}
	}
	return out
}

// bodies returns the functions that make up the goroutine's own code: its
// roots, or for go run(f) the funcs run stands for.
func (s *spawn) bodies() []*ssa.Function {
	var out []*ssa.Function
	for _, fs := range s.override {
		out = append(out, fs...)
	}
	return append(out, s.roots...)
}

// sortedInits returns the keys of an init summary in source order of
// their inits, so that what is reported does not depend on map order.
func sortedInits(m map[key]initSite) []key {
	keys := make([]key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]].at.Pos() < m[keys[j]].at.Pos() })
	return keys
}
