package vet

import (
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
				var roots []*ssa.Function
				switch in := in.(type) {
				case *ssa.Go:
					roots = c.callees[in]
				case *ssa.Call:
					i := asyncFuncArg(in.Common())
					if i < 0 || i >= len(in.Common().Args) {
						continue
					}
					roots = c.funcValues(in.Common().Args[i])
				default:
					continue
				}
				if len(roots) == 0 {
					continue
				}
				s := &spawn{at: in, fn: fn, roots: roots, loop: inLoop(b)}
				c.spawns = append(c.spawns, s)
				c.spawnsAt[in] = s
			}
		}
	}
	for _, s := range c.spawns {
		s.reach = c.reachFrom(s.roots)
	}
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
func (c *checker) reachFrom(roots []*ssa.Function) map[*ssa.Function][]ssa.Instruction {
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
					if len(c.callers[cl]) == 0 && !c.spawnedClosure(cl) {
						work = append(work, item{cl, in, 1})
					}
				}
				if call, ok := in.(ssa.CallInstruction); ok && c.spawnsAt[in] == nil {
					if _, isGo := in.(*ssa.Go); isGo {
						continue
					}
					for _, t := range c.callees[call] {
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
					if len(c.callers[cl]) == 0 && !c.spawnedClosure(cl) {
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

// mustSignal returns what fn surely signals before it returns: channels it
// closes or sends on, WaitGroups it calls Done on, on every path.
func (c *checker) mustSignal(fn *ssa.Function, depth int) map[key]bool {
	if m, ok := c.memoSignal[fn]; ok {
		return m
	}
	c.memoSignal[fn] = nil
	out := map[key]bool{}
	if depth <= maxSummary && len(fn.Blocks) > 0 {
		f := c.fi(fn)
		entry := fn.Blocks[0].Instrs[0]
		for _, s := range f.signals {
			if s.deferred || f.postDominates(s.at, entry) || s.at == entry {
				out[s.k] = true
			}
		}
	}
	c.memoSignal[fn] = out
	return out
}

// mustWait returns what fn surely waits for before it returns.
func (c *checker) mustWait(fn *ssa.Function, depth int) map[key]bool {
	if m, ok := c.memoWaits[fn]; ok {
		return m
	}
	c.memoWaits[fn] = nil
	out := map[key]bool{}
	if depth <= maxSummary && len(fn.Blocks) > 0 {
		f := c.fi(fn)
		entry := fn.Blocks[0].Instrs[0]
		for _, w := range f.waits {
			if w.cond == nil && (w.at == entry || f.postDominates(w.at, entry)) {
				out[w.k] = true
			}
		}
	}
	c.memoWaits[fn] = out
	return out
}

// mayInit returns the slots fn or the functions it calls (bounded) may
// store a non-nil value to, with the call or store that does it.
func (c *checker) mayInit(fn *ssa.Function, depth int) map[key]ssa.Instruction {
	if m, ok := c.memoInits[fn]; ok {
		return m
	}
	c.memoInits[fn] = nil
	out := map[key]ssa.Instruction{}
	if depth <= maxSummary {
		f := c.fi(fn)
		for _, s := range f.stores {
			if !s.dispose && !s.fresh {
				if _, ok := out[s.k]; !ok {
					out[s.k] = s.at
				}
			}
		}
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				call, ok := in.(*ssa.Call)
				if !ok {
					continue
				}
				for _, t := range c.callees[call] {
					for k, at := range c.mayInit(t, depth+1) {
						if k.local != nil {
							continue // another call's variable
						}
						if _, ok := out[k]; !ok {
							out[k] = at
						}
					}
				}
			}
		}
	}
	c.memoInits[fn] = out
	return out
}
