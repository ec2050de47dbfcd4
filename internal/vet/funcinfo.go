package vet

import (
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

// funcInfo is what the rules need of one function: its accesses and
// synchronization events, instruction order, post-dominators, locksets.
type funcInfo struct {
	fn    *ssa.Function
	index map[ssa.Instruction]int // position within its block

	uses    []*use
	stores  []*store // inits and disposes
	wg      []*wgOp
	waits   []*wait   // receives and WaitGroup.Wait: what a function can block on
	signals []*signal // closes, sends and WaitGroup.Done: what another goroutine can wait for

	pdom     [][]bool // pdom[b][a]: block a post-dominates block b
	lockIn   []lockset
	lockDone bool
}

// A use reads a slot whose value is then dereferenced (or sends on a
// channel).
type use struct {
	k     key
	fn    *ssa.Function
	at    ssa.Instruction // the read of the slot, or the send
	deref ssa.Instruction // where the value is dereferenced
	send  bool            // a send on the channel k
	text  string
	pos   token.Pos // where to report it, when not at (a select's send case)
}

// A store initializes (non-nil) or disposes of (nil, close) a slot.
type store struct {
	k        key
	fn       *ssa.Function
	at       ssa.Instruction
	dispose  bool
	close    bool
	fresh    bool // on an object fn made and has not shared yet
	deferred bool // a deferred close
	text     string
}

type wgOp struct {
	k  key
	at ssa.Instruction
	op string // Add, Done, Wait, Go
}

// A wait blocks until another goroutine signals k: a receive, a select case
// receiving (then only the case's branch waited), WaitGroup.Wait.
type wait struct {
	k    key
	at   ssa.Instruction
	cond *ssa.BasicBlock // a select case: the branch that received; nil: unconditional
}

type signal struct {
	k        key
	at       ssa.Instruction
	deferred bool
}

func (c *checker) fi(fn *ssa.Function) *funcInfo {
	if f := c.info[fn]; f != nil {
		return f
	}
	f := &funcInfo{fn: fn, index: map[ssa.Instruction]int{}}
	c.info[fn] = f
	for _, b := range fn.Blocks {
		for i, in := range b.Instrs {
			f.index[in] = i
		}
	}
	c.collect(f)
	return f
}

// collect finds fn's accesses and synchronization events.
func (c *checker) collect(f *funcInfo) {
	fn := f.fn
	for _, b := range fn.Blocks {
		for _, in := range b.Instrs {
			switch in := in.(type) {
			case *ssa.Store:
				if !refType(in.Val.Type()) {
					continue
				}
				k := c.slotKey(in.Addr)
				if !k.valid() {
					continue
				}
				f.stores = append(f.stores, &store{k: k, fn: fn, at: in, dispose: isNilConst(in.Val),
					fresh: c.fresh(in.Addr, in), text: c.text(in.Addr)})
			case *ssa.UnOp:
				switch in.Op {
				case token.MUL:
					if !refType(in.Type()) {
						continue
					}
					k := c.slotKey(in.X)
					if !k.valid() {
						continue
					}
					c.addUse(f, k, in, in, c.text(in.X))
				case token.ARROW:
					if k := c.objKey(in.X); k.valid() {
						f.waits = append(f.waits, &wait{k: k, at: in})
					}
				}
			case *ssa.Send:
				if k := c.objKey(in.Chan); k.valid() {
					f.uses = append(f.uses, &use{k: k, fn: fn, at: in, deref: in, send: true, text: c.text(in.Chan)})
					f.signals = append(f.signals, &signal{k: k, at: in})
				}
			case *ssa.Select:
				c.collectSelect(f, in)
			case *ssa.Defer:
				c.collectCall(f, in, in.Common(), true)
				// defer func() { close(done) }(): what the closure surely
				// signals, it signals at exit.
				for _, t := range c.callees[in] {
					for k := range c.mustSignal(t, 0) {
						f.signals = append(f.signals, &signal{k: k, at: in, deferred: true})
					}
				}
			case *ssa.Call:
				c.collectCall(f, in, in.Common(), false)
			}
		}
	}
}

func (c *checker) collectSelect(f *funcInfo, sel *ssa.Select) {
	// Which block each case leads to: the select's index is compared with
	// the case number, and the true branch is that case.
	caseBlock := map[int]*ssa.BasicBlock{}
	if refs := sel.Referrers(); refs != nil {
		for _, r := range *refs {
			ex, ok := r.(*ssa.Extract)
			if !ok || ex.Index != 0 || ex.Referrers() == nil {
				continue
			}
			for _, r2 := range *ex.Referrers() {
				bin, ok := r2.(*ssa.BinOp)
				if !ok || bin.Op != token.EQL || bin.Referrers() == nil {
					continue
				}
				k, ok := bin.Y.(*ssa.Const)
				if !ok {
					continue
				}
				n := int(k.Int64())
				for _, r3 := range *bin.Referrers() {
					if iff, ok := r3.(*ssa.If); ok && len(iff.Block().Succs) == 2 {
						t := iff.Block().Succs[0]
						if len(t.Preds) == 1 {
							caseBlock[n] = t
						}
					}
				}
			}
		}
	}
	for i, st := range sel.States {
		k := c.objKey(st.Chan)
		if !k.valid() {
			continue
		}
		if st.Dir == types.SendOnly {
			f.uses = append(f.uses, &use{k: k, fn: f.fn, at: sel, deref: sel, send: true, text: c.text(st.Chan), pos: st.Pos})
			if !sel.Blocking {
				continue
			}
			if len(sel.States) == 1 {
				f.signals = append(f.signals, &signal{k: k, at: sel})
			}
			continue
		}
		if len(sel.States) == 1 && sel.Blocking {
			f.waits = append(f.waits, &wait{k: k, at: sel})
		} else if b := caseBlock[i]; b != nil {
			f.waits = append(f.waits, &wait{k: k, at: sel, cond: b})
		}
	}
}

func (c *checker) collectCall(f *funcInfo, in ssa.CallInstruction, common *ssa.CallCommon, deferred bool) {
	fn := f.fn
	if b, ok := common.Value.(*ssa.Builtin); ok {
		if b.Name() == "close" && len(common.Args) == 1 {
			// A close of a channel the analyzer cannot name is still the
			// act of a check-then-act.
			k := c.objKey(common.Args[0])
			f.stores = append(f.stores, &store{k: k, fn: fn, at: in, dispose: true, close: true,
				deferred: deferred, text: c.text(common.Args[0])})
			if k.valid() {
				f.signals = append(f.signals, &signal{k: k, at: in, deferred: deferred})
			}
		}
		return
	}
	if k, op := c.atomicCall(common); k.valid() {
		switch op {
		case "Load":
			if call, ok := in.(*ssa.Call); ok && !deferred && refType(call.Type()) {
				c.addUse(f, k, call, call, c.text(common.Args[0]))
			}
		case "Store", "Swap":
			if v := common.Args[1]; refType(v.Type()) {
				f.stores = append(f.stores, &store{k: k, fn: fn, at: in, dispose: isNilConst(v),
					fresh: c.fresh(common.Args[0], in), text: c.text(common.Args[0])})
			}
		case "CompareAndSwap":
			if v := common.Args[2]; refType(v.Type()) {
				f.stores = append(f.stores, &store{k: k, fn: fn, at: in, dispose: isNilConst(v),
					text: c.text(common.Args[0])})
			}
		}
		return
	}
	if pkg, typ, name := calleeName(common); pkg == "sync" && typ == "WaitGroup" {
		k := c.ptrKey(common.Args[0])
		if !k.valid() {
			return
		}
		switch name {
		case "Add", "Done", "Wait", "Go":
			f.wg = append(f.wg, &wgOp{k: k, at: in, op: name})
		}
		switch name {
		case "Done":
			f.signals = append(f.signals, &signal{k: k, at: in, deferred: deferred})
		case "Wait":
			if !deferred {
				f.waits = append(f.waits, &wait{k: k, at: in})
			}
		}
		return
	}
	if deferred {
		return
	}
	// A call of the package's function that surely waits: s.Wait().
	for _, t := range c.callees[in] {
		if len(c.callees[in]) != 1 {
			break
		}
		for k := range c.mustWait(t, 0) {
			f.waits = append(f.waits, &wait{k: k, at: in})
		}
	}
}

// addUse records a read of slot k by at if its value is dereferenced
// where it may be nil.
func (c *checker) addUse(f *funcInfo, k key, at ssa.Value, in ssa.Instruction, text string) {
	d := c.firstDeref(at, 0)
	if d == nil {
		return
	}
	f.uses = append(f.uses, &use{k: k, fn: f.fn, at: in, deref: d, text: text})
}

// ptrKey returns the key of the object a pointer refers to (a mutex, a
// WaitGroup): its field, package variable or local.
func (c *checker) ptrKey(v ssa.Value) key {
	os := c.origins(v)
	if len(os) != 1 {
		return key{}
	}
	switch o := os[0].(type) {
	case *ssa.FieldAddr, *ssa.Global:
		return c.slotKey(o)
	case *ssa.Alloc:
		return key{local: o}
	case *ssa.UnOp:
		if o.Op == token.MUL {
			return c.slotKey(o.X)
		}
	}
	return key{}
}

// calleeName names a static callee by package path, receiver type and name.
func calleeName(common *ssa.CallCommon) (pkg, typ, name string) {
	if common.IsInvoke() {
		return "", "", ""
	}
	callee := common.StaticCallee()
	if callee == nil {
		return "", "", ""
	}
	obj, ok := callee.Object().(*types.Func)
	if !ok {
		if o := callee.Origin(); o != nil {
			obj, ok = o.Object().(*types.Func)
		}
		if !ok {
			return "", "", ""
		}
	}
	if obj.Pkg() != nil {
		pkg = obj.Pkg().Path()
	}
	if recv := obj.Type().(*types.Signature).Recv(); recv != nil {
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := t.(*types.Named); ok {
			typ = n.Obj().Name()
		}
	}
	return pkg, typ, obj.Name()
}

// atomicCall recognizes the methods of sync/atomic's Pointer and Value on
// a slot: the slot's key and the method.
func (c *checker) atomicCall(common *ssa.CallCommon) (key, string) {
	pkg, typ, name := calleeName(common)
	if pkg != "sync/atomic" || (typ != "Pointer" && typ != "Value") || len(common.Args) == 0 {
		return key{}, ""
	}
	return c.slotKey(common.Args[0]), name
}

// fresh reports whether addr is a field of an object made in the
// function at hand that nothing else can see yet at instruction at: no go
// statement, call, closure or store has taken it before.
func (c *checker) fresh(addr ssa.Value, at ssa.Instruction) bool {
	var alloc *ssa.Alloc
	switch a := addr.(type) {
	case *ssa.FieldAddr:
		alloc, _ = a.X.(*ssa.Alloc)
	case *ssa.Alloc:
		// A captured variable: its cell is shared once a closure takes it.
		alloc = a
	}
	if alloc == nil {
		return false
	}
	f := c.fi(at.Parent())
	refs := alloc.Referrers()
	if refs == nil {
		return true
	}
	for _, r := range *refs {
		switch r := r.(type) {
		case *ssa.FieldAddr, *ssa.IndexAddr, *ssa.DebugRef:
			continue
		case *ssa.UnOp:
			if r.Op == token.MUL {
				continue
			}
		case *ssa.Store:
			if r.Addr == alloc {
				continue
			}
		}
		// Anything else shares the object: it does so before at if it
		// comes first on some path to at that does not make a new object
		// (a loop's next iteration).
		if c.mayPrecedeAvoiding(f, r, at, alloc) {
			return false
		}
	}
	return true
}

// mayPrecede reports whether a can execute before b in one run of the
// function (b reachable from a).
func (c *checker) mayPrecede(f *funcInfo, a, b ssa.Instruction) bool {
	ab, bb := a.Block(), b.Block()
	if ab == bb && f.index[a] < f.index[b] {
		return true
	}
	seen := map[*ssa.BasicBlock]bool{}
	work := append([]*ssa.BasicBlock(nil), ab.Succs...)
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		if x == bb {
			return true
		}
		work = append(work, x.Succs...)
	}
	return false
}

// mayPrecedeAvoiding is mayPrecede over paths that do not execute the
// barrier instruction again.
func (c *checker) mayPrecedeAvoiding(f *funcInfo, a, b, barrier ssa.Instruction) bool {
	ab, bb, xb := a.Block(), b.Block(), barrier.Block()
	if ab == bb && f.index[a] < f.index[b] {
		return !(xb == ab && f.index[a] < f.index[barrier] && f.index[barrier] < f.index[b])
	}
	if ab == xb && f.index[a] < f.index[barrier] {
		return false // the path leaves a's block through the barrier
	}
	seen := map[*ssa.BasicBlock]bool{}
	work := append([]*ssa.BasicBlock(nil), ab.Succs...)
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		if x == bb && !(x == xb && f.index[barrier] < f.index[b]) {
			return true
		}
		if x == xb {
			continue
		}
		work = append(work, x.Succs...)
	}
	return false
}

// dominates reports whether a executes before b on every path to b.
func (f *funcInfo) dominates(a, b ssa.Instruction) bool {
	ab, bb := a.Block(), b.Block()
	if ab == bb {
		return f.index[a] < f.index[b]
	}
	return ab.Dominates(bb)
}

// postDominates reports whether a executes after b on every path from b
// to the function's end.
func (f *funcInfo) postDominates(a, b ssa.Instruction) bool {
	ab, bb := a.Block(), b.Block()
	if ab == bb {
		return f.index[a] > f.index[b]
	}
	if f.pdom == nil {
		f.computePostDom()
	}
	return f.pdom[bb.Index][ab.Index]
}

func (f *funcInfo) computePostDom() {
	n := len(f.fn.Blocks)
	f.pdom = make([][]bool, n)
	for i := range f.pdom {
		f.pdom[i] = make([]bool, n)
		b := f.fn.Blocks[i]
		if len(b.Succs) == 0 {
			f.pdom[i][i] = true
			continue
		}
		for j := range f.pdom[i] {
			f.pdom[i][j] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for i := n - 1; i >= 0; i-- {
			b := f.fn.Blocks[i]
			if len(b.Succs) == 0 {
				continue
			}
			for j := 0; j < n; j++ {
				v := j == i
				if !v {
					v = true
					for _, s := range b.Succs {
						if !f.pdom[s.Index][j] {
							v = false
							break
						}
					}
				}
				if f.pdom[i][j] != v {
					f.pdom[i][j] = v
					changed = true
				}
			}
		}
	}
}
