package vet

import (
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ssa"
)

type derefKey struct {
	fn    *ssa.Function
	param int
}

type derefMemo struct{ done, yes bool }

// firstDeref returns an instruction that dereferences v, or a value v
// flows into, where it may be nil: a field access, a load or store through
// it, a map write, a send, a call of it, a method call on it, or passing it
// to a function of the package that does one of these. A dereference
// dominated by a nil check of the value is safe, and so is one in a block
// that only an assignment of a non-nil value or a nil check lets through.
func (c *checker) firstDeref(v ssa.Value, depth int) ssa.Instruction {
	type item struct {
		v     ssa.Value
		depth int
	}
	chain := []ssa.Value{v}
	work := []item{{v, 0}}
	seen := map[ssa.Value]bool{v: true}
	for len(work) > 0 {
		it := work[0]
		work = work[1:]
		refs := it.v.Referrers()
		if refs == nil {
			continue
		}
		for _, r := range *refs {
			if c.nilChecked(chain, r.Block()) {
				continue
			}
			switch r := r.(type) {
			case *ssa.FieldAddr:
				if r.X == it.v {
					return r
				}
			case *ssa.IndexAddr:
				if r.X == it.v {
					if _, ok := r.X.Type().Underlying().(*types.Pointer); ok {
						return r
					}
				}
			case *ssa.UnOp:
				if r.Op == token.MUL && r.X == it.v {
					return r
				}
			case *ssa.Store:
				if r.Addr == it.v {
					return r
				}
			case *ssa.MapUpdate:
				if r.Map == it.v {
					return r
				}
			// A send on a nil channel blocks (in a select with a default
			// it never happens): a hang, not a crash, so no dereference.
			case *ssa.Call:
				if c.callDerefs(r.Common(), it.v, depth) {
					return r
				}
			case *ssa.Go, *ssa.Defer:
				// Evaluated now, run later: the function value is
				// dereferenced now, the arguments later.
				if r.(ssa.CallInstruction).Common().Value == it.v {
					return r
				}
			case *ssa.Phi:
				if it.depth < 3 && !seen[r] && !c.phiEdgeChecked(r, it.v, chain) {
					seen[r] = true
					chain = append(chain, r)
					work = append(work, item{r, it.depth + 1})
				}
			case *ssa.ChangeType:
				if it.depth < 3 && !seen[r] {
					seen[r] = true
					chain = append(chain, r)
					work = append(work, item{r, it.depth + 1})
				}
			}
		}
	}
	return nil
}

// callDerefs reports whether a call dereferences v: calls it, calls a
// method on it, or passes it to a function that dereferences it.
func (c *checker) callDerefs(common *ssa.CallCommon, v ssa.Value, depth int) bool {
	if common.Value == v {
		return true // f() or iface.M()
	}
	if b, ok := common.Value.(*ssa.Builtin); ok {
		return b.Name() == "close" && len(common.Args) == 1 && common.Args[0] == v
	}
	if common.IsInvoke() {
		return false
	}
	callee := common.StaticCallee()
	for i, a := range common.Args {
		if a != v {
			continue
		}
		if callee == nil {
			return false
		}
		if c.inPkg[callee] && callee.Blocks != nil {
			if depth < maxSummary && c.derefParam(callee, i, depth+1) {
				return true
			}
			continue
		}
		// Another package's method on a pointer: assume it dereferences
		// its receiver (nil receivers are rare outside the package).
		if i == 0 && callee.Signature.Recv() != nil {
			if _, ok := callee.Signature.Recv().Type().Underlying().(*types.Pointer); ok {
				pkg, typ, _ := calleeName(common)
				if pkg == "sync/atomic" && (typ == "Pointer" || typ == "Value") {
					return false
				}
				return true
			}
		}
	}
	return false
}

func (c *checker) derefParam(fn *ssa.Function, i, depth int) bool {
	k := derefKey{fn, i}
	if m, ok := c.memoDeref[k]; ok {
		return m.yes
	}
	c.memoDeref[k] = derefMemo{done: true} // recursion: no
	yes := false
	if i < len(fn.Params) {
		yes = c.firstDeref(fn.Params[i], depth) != nil
	}
	c.memoDeref[k] = derefMemo{done: true, yes: yes}
	return yes
}

// nilChecked reports whether block b is only reached after one of the
// values in chain was found non-nil.
func (c *checker) nilChecked(chain []ssa.Value, b *ssa.BasicBlock) bool {
	for _, v := range chain {
		for _, nb := range nonNilBlocks(v) {
			if nb.Dominates(b) {
				return true
			}
		}
	}
	return false
}

// phiEdgeChecked reports whether v enters phi only over an edge that a nil
// check of v guards.
func (c *checker) phiEdgeChecked(phi *ssa.Phi, v ssa.Value, chain []ssa.Value) bool {
	for i, e := range phi.Edges {
		if e != v {
			continue
		}
		pred := phi.Block().Preds[i]
		if !c.nilChecked(chain, pred) && !nonNilEdge(chain, pred, phi.Block()) {
			return false
		}
	}
	return true
}

// nonNilBlocks returns the blocks entered only when v != nil: the branch
// of `if v != nil` (or the else branch of `if v == nil`), when it has no
// other predecessor.
func nonNilBlocks(v ssa.Value) []*ssa.BasicBlock {
	refs := v.Referrers()
	if refs == nil {
		return nil
	}
	var out []*ssa.BasicBlock
	for _, r := range *refs {
		bin, ok := r.(*ssa.BinOp)
		if !ok || (bin.Op != token.EQL && bin.Op != token.NEQ) {
			continue
		}
		if !(isNilConst(bin.X) || isNilConst(bin.Y)) {
			continue
		}
		if bin.Referrers() == nil {
			continue
		}
		for _, r2 := range *bin.Referrers() {
			iff, ok := r2.(*ssa.If)
			if !ok {
				continue
			}
			succ := iff.Block().Succs[0]
			if bin.Op == token.EQL {
				succ = iff.Block().Succs[1]
			}
			if len(succ.Preds) == 1 {
				out = append(out, succ)
			}
		}
	}
	return out
}

// nilBranch returns the block entered when v == nil after `if v == nil`
// (or `if v != nil`'s else), or nil.
func nilBranch(v ssa.Value) (*ssa.If, *ssa.BasicBlock) {
	refs := v.Referrers()
	if refs == nil {
		return nil, nil
	}
	for _, r := range *refs {
		bin, ok := r.(*ssa.BinOp)
		if !ok || (bin.Op != token.EQL && bin.Op != token.NEQ) || bin.Referrers() == nil {
			continue
		}
		if !(isNilConst(bin.X) || isNilConst(bin.Y)) {
			continue
		}
		for _, r2 := range *bin.Referrers() {
			if iff, ok := r2.(*ssa.If); ok {
				succ := iff.Block().Succs[0]
				if bin.Op == token.NEQ {
					succ = iff.Block().Succs[1]
				}
				return iff, succ
			}
		}
	}
	return nil, nil
}

// nonNilEdge reports whether the edge from pred to succ is taken only when
// one of the values in chain is non-nil: pred ends in `if v == nil` and
// succ is its else branch (x := m[k]; if x == nil { x = new(T) }; x.f).
func nonNilEdge(chain []ssa.Value, pred, succ *ssa.BasicBlock) bool {
	iff, ok := pred.Instrs[len(pred.Instrs)-1].(*ssa.If)
	if !ok || len(pred.Succs) != 2 {
		return false
	}
	bin, ok := iff.Cond.(*ssa.BinOp)
	if !ok || (bin.Op != token.EQL && bin.Op != token.NEQ) {
		return false
	}
	var other ssa.Value
	switch {
	case isNilConst(bin.Y):
		other = bin.X
	case isNilConst(bin.X):
		other = bin.Y
	default:
		return false
	}
	nonNil := pred.Succs[1] // v == nil is false
	if bin.Op == token.NEQ {
		nonNil = pred.Succs[0]
	}
	if nonNil != succ || pred.Succs[0] == pred.Succs[1] {
		return false
	}
	for _, v := range chain {
		if v == other {
			return true
		}
	}
	return false
}
