package vet

import (
	"go/types"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// A held lock: the mutex, the Lock call that took it (nil: held by every
// caller when the function is entered), and whether it is the write lock.
type held struct {
	k     key
	acq   ssa.Instruction
	write bool
}

// lockset is the set of locks surely held at a point; nil is the top of
// the lattice (not yet computed), an empty non-nil set holds nothing.
type lockset []held

func (s lockset) has(h held) bool {
	for _, x := range s {
		if x == h {
			return true
		}
	}
	return false
}

func meet(a, b lockset) lockset {
	return meetAt(a, b, nil)
}

// meetAt is the meet at a merge point: a lock held on both paths stays
// held; taken by different Lock calls, it is taken at the merge point
// (one critical section from there on).
func meetAt(a, b lockset, merge ssa.Instruction) lockset {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := lockset{}
	for _, x := range a {
		if b.has(x) {
			out = append(out, x)
			continue
		}
		for _, y := range b {
			if y.k == x.k {
				out = append(out, held{k: x.k, acq: merge, write: x.write && y.write})
				break
			}
		}
	}
	return out
}

// lockOp recognizes sync.Mutex and sync.RWMutex calls.
func (c *checker) lockOp(in ssa.Instruction) (k key, op string) {
	call, ok := in.(*ssa.Call)
	if !ok {
		return key{}, ""
	}
	common := call.Common()
	pkg, typ, name := calleeName(common)
	if pkg != "sync" || (typ != "Mutex" && typ != "RWMutex") || len(common.Args) == 0 {
		return key{}, ""
	}
	switch name {
	case "Lock", "RLock", "Unlock", "RUnlock":
		return c.ptrKey(common.Args[0]), name
	}
	return key{}, ""
}

// locksAt returns the locks surely held when in executes.
func (c *checker) locksAt(in ssa.Instruction) lockset {
	fn := in.Parent()
	f := c.fi(fn)
	if !f.lockDone {
		c.computeLocks(f)
	}
	b := in.Block()
	s := append(lockset{}, f.lockIn[b.Index]...)
	for _, x := range b.Instrs {
		if x == in {
			break
		}
		s = c.transfer(s, x)
	}
	return s
}

func (c *checker) transfer(s lockset, in ssa.Instruction) lockset {
	k, op := c.lockOp(in)
	if !k.valid() {
		return s
	}
	switch op {
	case "Lock", "RLock":
		return append(s, held{k: k, acq: in, write: op == "Lock"})
	default:
		out := lockset{}
		for _, h := range s {
			if h.k != k {
				out = append(out, h)
			}
		}
		return out
	}
}

func (c *checker) computeLocks(f *funcInfo) {
	n := len(f.fn.Blocks)
	f.lockIn = make([]lockset, n)
	out := make([]lockset, n)
	if n == 0 {
		f.lockDone = true
		return
	}
	entry := append(lockset{}, c.entryLocks[f.fn]...)
	for changed := true; changed; {
		changed = false
		for _, b := range f.fn.Blocks {
			var in lockset
			if b.Index == 0 {
				in = entry
			}
			for _, p := range b.Preds {
				in = meetAt(in, out[p.Index], b.Instrs[0])
			}
			if in == nil {
				continue // no predecessor computed yet
			}
			s := append(lockset{}, in...)
			for _, x := range b.Instrs {
				s = c.transfer(s, x)
			}
			if !sameSet(out[b.Index], s) || f.lockIn[b.Index] == nil {
				f.lockIn[b.Index] = in
				out[b.Index] = s
				changed = true
			}
		}
	}
	for i := range f.lockIn {
		if f.lockIn[i] == nil {
			f.lockIn[i] = lockset{}
		}
	}
	f.lockDone = true
}

func sameSet(a, b lockset) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !b.has(x) {
			return false
		}
	}
	return true
}

// computeEntryLocks finds, for functions whose callers are all known, the
// locks every caller holds at the call (a helper called under the lock).
func (c *checker) computeEntryLocks() {
	c.entryLocks = map[*ssa.Function]lockset{}
	for round := 0; round < 8; round++ {
		next := map[*ssa.Function]lockset{}
		for _, fn := range c.funcs {
			if s := c.lockedByName(fn); s != nil {
				next[fn] = s
				continue
			}
			if s := c.inlineClosureLocks(fn); s != nil {
				next[fn] = s
				continue
			}
			if !c.allCallersKnown(fn) {
				continue
			}
			var s lockset
			for _, site := range c.callers[fn] {
				// A deferred call runs at the return, usually with the locks
				// of the defer statement still held (defer func() { ...;
				// c.Unlock() }()): taking those can only remove hints.
				if _, ok := site.(*ssa.Go); ok {
					// A goroutine its starter waits for while holding a
					// lock runs inside that critical section.
					s = meet(s, c.heldThroughJoin(c.spawnsAt[site]))
					if len(s) == 0 {
						break
					}
					continue
				}
				at := lockset{}
				for _, h := range c.locksAt(site) {
					at = append(at, held{k: h.k, write: h.write})
				}
				s = meet(s, at)
			}
			if len(s) > 0 {
				next[fn] = s
			}
		}
		same := len(next) == len(c.entryLocks)
		for fn, s := range next {
			if !sameSet(c.entryLocks[fn], s) {
				same = false
			}
		}
		c.entryLocks = next
		for _, f := range c.info {
			f.lockDone = false
		}
		if same {
			break
		}
	}
}

// commonLock reports whether a lock is held at both a and b with at least
// one side holding it for writing: the two cannot overlap.
func (c *checker) commonLock(a, b ssa.Instruction) bool {
	la, lb := c.locksAt(a), c.locksAt(b)
	for _, x := range la {
		for _, y := range lb {
			if x.k == y.k && (x.write || y.write) {
				return true
			}
		}
	}
	return false
}

// sameSection reports whether a and b, in one function, lie in one
// critical section: a lock taken once is held at both.
func (c *checker) sameSection(a, b ssa.Instruction) bool {
	la, lb := c.locksAt(a), c.locksAt(b)
	for _, x := range la {
		if x.write && lb.has(x) {
			return true
		}
	}
	return false
}

// lockedByName returns the locks a method named like fooLocked is, by Go
// convention, called with: its receiver's mutexes.
func (c *checker) lockedByName(fn *ssa.Function) lockset {
	recv := fn.Signature.Recv()
	if recv == nil || !strings.HasSuffix(fn.Name(), "Locked") {
		return nil
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return nil
	}
	var out lockset
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if n, ok := f.Type().(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "sync" &&
			(n.Obj().Name() == "Mutex" || n.Obj().Name() == "RWMutex") {
			out = append(out, held{k: key{field: f}, write: true})
		}
	}
	return out
}

// inlineClosureLocks returns, for a closure handed to a function that runs
// it before returning (once.Do(func() { close(ch) })), the locks held at
// that call.
func (c *checker) inlineClosureLocks(fn *ssa.Function) lockset {
	mcs := c.closures[fn]
	if fn.Parent() == nil || len(c.callers[fn]) > 0 || len(mcs) != 1 || !c.runsInline(mcs[0]) {
		return nil
	}
	var s lockset
	for _, r := range *mcs[0].Referrers() {
		call, ok := r.(ssa.CallInstruction)
		if !ok {
			return nil
		}
		at := lockset{}
		for _, h := range c.locksAt(call) {
			at = append(at, held{k: h.k, write: h.write})
		}
		s = meet(s, at)
	}
	if len(s) == 0 {
		return nil
	}
	return s
}

// heldThroughJoin returns the locks the starter of s holds at the go
// statement and still holds, taken by the same Lock, where it waits for
// the goroutine to end: no other holder of such a lock runs while the
// goroutine does.
func (c *checker) heldThroughJoin(s *spawn) lockset {
	out := lockset{}
	if s == nil {
		return out
	}
	w := c.joinedBy(s)
	if w == nil {
		return out
	}
	atWait := c.locksAt(w.at)
	for _, h := range c.locksAt(s.at) {
		if atWait.has(h) {
			out = append(out, held{k: h.k, write: h.write})
		}
	}
	return out
}
