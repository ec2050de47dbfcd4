package vet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ssa"
)

// Map entries as slots: an entry of a map (or a sync.Map) that one
// goroutine looks up and dereferences without checking that it is there,
// while another deletes entries of that map. The lookup then yields nil
// (a missing entry of a map of pointers, funcs or interfaces), and the
// dereference panics. The map itself is named by its slot (the field,
// package variable or captured local that holds it); which entry is not
// known, so any delete of the map pairs with any unchecked lookup.

// An entryUse looks up an entry and dereferences it where it may be
// missing.
type entryUse struct {
	k     key // the map's slot
	fn    *ssa.Function
	at    ssa.Instruction // the lookup: a Lookup, or a sync.Map Load
	deref ssa.Instruction
	index ssa.Value // the key looked up
	text  string    // the map
}

// An entryDel removes entries of a map: delete, clear, or sync.Map's
// Delete, LoadAndDelete, CompareAndDelete, Clear.
type entryDel struct {
	k     key
	fn    *ssa.Function
	at    ssa.Instruction
	index ssa.Value // nil: every entry
	text  string
}

// syncMapOp recognizes a method of sync.Map.
func syncMapOp(common *ssa.CallCommon) string {
	pkg, typ, name := calleeName(common)
	if pkg != "sync" || typ != "Map" || len(common.Args) == 0 {
		return ""
	}
	return name
}

// mapKey names the map a lookup or delete works on: the slot it was
// loaded from.
func (c *checker) mapKey(m ssa.Value) key {
	if _, ok := m.Type().Underlying().(*types.Map); !ok {
		return key{}
	}
	k := c.objKey(m)
	if k.local != nil {
		if _, ok := k.local.(*ssa.Alloc); !ok {
			return key{} // a map the function made: not shared by name
		}
	}
	return k
}

// collectEntries finds the package's unchecked entry lookups and deletes.
func (c *checker) collectEntries() (uses []*entryUse, dels []*entryDel) {
	for _, fn := range c.funcs {
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				switch in := in.(type) {
				case *ssa.Lookup:
					mt, ok := in.X.Type().Underlying().(*types.Map)
					if !ok || !refType(mt.Elem()) {
						continue
					}
					k := c.mapKey(in.X)
					if !k.valid() {
						continue
					}
					v, okv := ssa.Value(in), ssa.Value(nil)
					if in.CommaOk {
						v, okv = extracts(in)
					}
					if v == nil {
						continue
					}
					if !handedKey(in.Index) {
						continue
					}
					if d := c.entryDeref(v, okv); d != nil {
						uses = append(uses, &entryUse{k: k, fn: fn, at: in, deref: d, index: in.Index, text: c.text(in.X)})
					}
				case *ssa.Call:
					common := in.Common()
					if b, ok := common.Value.(*ssa.Builtin); ok {
						if (b.Name() == "delete" || b.Name() == "clear") && len(common.Args) >= 1 {
							if k := c.mapKey(common.Args[0]); k.valid() {
								d := &entryDel{k: k, fn: fn, at: in, text: c.text(common.Args[0])}
								if b.Name() == "delete" && len(common.Args) == 2 {
									d.index = common.Args[1]
								}
								dels = append(dels, d)
							}
						}
						continue
					}
					op := syncMapOp(common)
					if op == "" {
						continue
					}
					k := c.ptrKey(common.Args[0])
					if !k.valid() {
						continue
					}
					switch op {
					case "Load":
						v, okv := extracts(in)
						if v == nil || len(common.Args) < 2 || !handedKey(common.Args[1]) {
							continue
						}
						if d := c.entryDeref(v, okv); d != nil {
							uses = append(uses, &entryUse{k: k, fn: fn, at: in, deref: d, index: common.Args[1], text: c.text(common.Args[0])})
						}
					case "Delete", "LoadAndDelete", "CompareAndDelete", "Clear":
						d := &entryDel{k: k, fn: fn, at: in, text: c.text(common.Args[0])}
						if op != "Clear" && len(common.Args) > 1 {
							d.index = common.Args[1]
						}
						dels = append(dels, d)
					}
				}
			}
		}
	}
	return uses, dels
}

// extracts returns the value and the ok of a comma-ok tuple.
func extracts(t ssa.Value) (v, ok ssa.Value) {
	refs := t.Referrers()
	if refs == nil {
		return nil, nil
	}
	for _, r := range *refs {
		if ex, isEx := r.(*ssa.Extract); isEx {
			switch ex.Index {
			case 0:
				v = ex
			case 1:
				ok = ex
			}
		}
	}
	return v, ok
}

// entryDeref returns where a looked-up entry v is dereferenced while it
// may be missing: not where the lookup's ok (okv) or a nil check of v
// says it is there. A type assertion without comma-ok on a nil interface
// panics too.
func (c *checker) entryDeref(v, okv ssa.Value) ssa.Instruction {
	var d ssa.Instruction
	if refs := v.Referrers(); refs != nil {
		for _, r := range *refs {
			ta, ok := r.(*ssa.TypeAssert)
			if !ok || ta.X != v {
				continue
			}
			if !ta.CommaOk {
				if !c.nilChecked([]ssa.Value{v}, ta.Block()) {
					d = ta
				}
			} else if x, okx := extracts(ta); x != nil && d == nil {
				// v.(*T) with comma-ok: the asserted value is nil when the
				// entry is missing, unless the assertion's ok is checked.
				if dd := c.firstDeref(x, 0); dd != nil && !okChecked(okx, dd) {
					d = dd
				}
			}
		}
	}
	if d == nil {
		// A field access, a call of it, a method call on it (a sync.Map's
		// value is an interface), passing it to a function that does one.
		d = c.firstDeref(v, 0)
	}
	if d == nil || okChecked(okv, d) {
		return nil
	}
	if okv != nil && okv.Referrers() != nil && len(*okv.Referrers()) > 0 {
		// The ok is looked at: the function handles a missing entry,
		// along paths the analyzer does not follow (a loop that keeps the
		// last hit).
		return nil
	}
	return d
}

// handedKey reports whether a lookup's key is what its function was
// handed: a parameter or a captured variable (also converted to any). A
// goroutine that works on one entry is given its key; a key the function
// computes (a field, a constant, a range variable) names an entry some
// invariant keeps.
func handedKey(v ssa.Value) bool {
	switch unconvert(v).(type) {
	case *ssa.Parameter, *ssa.FreeVar:
		return true
	}
	return false
}

// okChecked reports whether in runs only where ok is true: in the true
// branch of `if ok` (or the false branch of `if !ok`), entered only from
// that check.
func okChecked(ok ssa.Value, in ssa.Instruction) bool {
	if ok == nil {
		return false
	}
	for _, b := range trueBlocks(ok, 0) {
		if b.Dominates(in.Block()) {
			return true
		}
	}
	return false
}

// trueBlocks returns the blocks entered only when the bool v is true.
func trueBlocks(v ssa.Value, depth int) []*ssa.BasicBlock { return branchBlocks(v, true, depth) }

// branchBlocks returns the blocks entered only when the bool v equals
// want, through at most two negations.
func branchBlocks(v ssa.Value, want bool, depth int) []*ssa.BasicBlock {
	refs := v.Referrers()
	if refs == nil || depth > 2 {
		return nil
	}
	succ := 0 // an If's true successor
	if !want {
		succ = 1
	}
	var out []*ssa.BasicBlock
	for _, r := range *refs {
		switch r := r.(type) {
		case *ssa.If:
			if s := r.Block().Succs[succ]; len(s.Preds) == 1 {
				out = append(out, s)
			}
		case *ssa.UnOp:
			if r.Op == token.NOT {
				out = append(out, branchBlocks(r, !want, depth+1)...)
			}
		}
	}
	return out
}

// entryGuarded reports whether the function that looks the entry up knows
// it is there for another reason: in the same critical section (or with no
// lock at all on either side) it checked another lookup of the same key,
// stored the entry, or ranges over the map.
func (c *checker) entryGuarded(u *entryUse) bool {
	f := c.fi(u.fn)
	mapAddr := func(in ssa.Instruction) ssa.Value {
		switch in := in.(type) {
		case *ssa.Lookup:
			return mapSlot(in.X)
		case *ssa.MapUpdate:
			return mapSlot(in.Map)
		case *ssa.Range:
			return mapSlot(in.X)
		case *ssa.Call:
			if op := syncMapOp(in.Common()); op != "" {
				return in.Common().Args[0]
			}
		}
		return nil
	}
	here := mapAddr(u.at)
	together := func(in ssa.Instruction) bool {
		return c.oneSection(in, u.at) || (len(c.locksAt(in)) == 0 && len(c.locksAt(u.at)) == 0)
	}
	for _, b := range u.fn.Blocks {
		for _, in := range b.Instrs {
			if in == u.at {
				continue
			}
			other := mapAddr(in)
			if other == nil || !(other == here || sameSlot(other, here)) || !together(in) {
				continue
			}
			switch in := in.(type) {
			case *ssa.MapUpdate:
				if sameKey(in.Key, u.index) && f.dominates(in, u.at) {
					return true
				}
			case *ssa.Lookup:
				if !sameKey(in.Index, u.index) {
					continue
				}
				if c.lookupChecked(in, u.at) || c.lazyEntry(f, in, u) {
					return true
				}
			case *ssa.Call:
				switch syncMapOp(in.Common()) {
				case "Load":
					if len(in.Common().Args) > 1 && sameKey(in.Common().Args[1], u.index) && c.lookupChecked(in, u.at) {
						return true
					}
				case "Store", "LoadOrStore", "Swap":
					if len(in.Common().Args) > 1 && sameKey(in.Common().Args[1], u.index) && f.dominates(in, u.at) {
						return true
					}
				}
			case *ssa.Range:
				// Inside a range over the map, the keys it yields are there.
				if refs := in.Referrers(); refs != nil {
					for _, r := range *refs {
						if next, ok := r.(*ssa.Next); ok {
							for _, tb := range rangeBodies(next) {
								if tb.Dominates(u.at.Block()) {
									return true
								}
							}
						}
					}
				}
			}
		}
	}
	return false
}

// rangeBodies returns the blocks a range loop's body starts with: entered
// when Next found an entry.
func rangeBodies(next *ssa.Next) []*ssa.BasicBlock {
	var out []*ssa.BasicBlock
	if refs := next.Referrers(); refs != nil {
		for _, r := range *refs {
			if ex, ok := r.(*ssa.Extract); ok && ex.Index == 0 {
				out = append(out, trueBlocks(ex, 0)...)
			}
		}
	}
	return out
}

// lookupChecked reports whether a lookup (comma-ok, or of a value
// compared with nil) reaches in only when the entry was there.
func (c *checker) lookupChecked(l ssa.Value, in ssa.Instruction) bool {
	lk, isLookup := l.(*ssa.Lookup)
	if isLookup && !lk.CommaOk {
		for _, nb := range nonNilBlocks(l) {
			if nb.Dominates(in.Block()) {
				return true
			}
		}
		return false
	}
	v, ok := extracts(l)
	if okChecked(ok, in) {
		return true
	}
	if v != nil {
		for _, nb := range nonNilBlocks(v) {
			if nb.Dominates(in.Block()) {
				return true
			}
		}
	}
	return false
}

// mapSlot returns the address a map value was loaded from, or the value.
func mapSlot(m ssa.Value) ssa.Value {
	if ld, ok := m.(*ssa.UnOp); ok && ld.Op == token.MUL {
		return ld.X
	}
	return m
}

// sameKey reports whether two map keys are the same value: one SSA value,
// equal constants, or loads of one variable.
func sameKey(a, b ssa.Value) bool {
	if a == nil || b == nil {
		return false
	}
	a, b = unconvert(a), unconvert(b)
	if ka, ok := a.(*ssa.Const); ok {
		kb, ok := b.(*ssa.Const)
		return ok && ka.Value != nil && kb.Value != nil && ka.Value.ExactString() == kb.Value.ExactString()
	}
	return sameValue(a, b, 0)
}

// unconvert looks through the conversion of a key to an interface (a
// sync.Map's keys are any).
func unconvert(v ssa.Value) ssa.Value {
	for i := 0; i < 3; i++ {
		switch x := v.(type) {
		case *ssa.MakeInterface:
			v = x.X
		case *ssa.ChangeType:
			v = x.X
		default:
			return v
		}
	}
	return v
}

// mapEntries pairs every delete of a map's entries with the unchecked
// lookups of that map that may run on another goroutine, unordered. Locks
// do not order them: the entry lives across critical sections, and a
// lookup under the lock still misses an entry deleted under it before.
// At least one side must run on a goroutine the package starts.
func (c *checker) mapEntries() {
	uses, dels := c.collectEntries()
	if len(uses) == 0 || len(dels) == 0 {
		return
	}
	byKey := map[key][]*entryUse{}
	for _, u := range uses {
		byKey[u.k] = append(byKey[u.k], u)
	}
	guarded := map[*entryUse]bool{}
	for _, d := range dels {
		for _, u := range byKey[d.k] {
			if u.fn == d.fn {
				continue
			}
			if g, ok := guarded[u]; ok && g {
				continue
			} else if !ok {
				guarded[u] = c.entryGuarded(u)
				if guarded[u] {
					continue
				}
			}
			if !sameOwner(mapSlot(c.entryMap(u)), mapSlot(c.delMap(d))) {
				continue
			}
			if plainStruct(mapSlot(c.delMap(d))) && c.plainOwner(d.k, u.fn) && c.plainOwner(d.k, d.fn) {
				continue // a plain data structure: its users synchronize
			}
			if h := c.entryPair(d, u); h != nil {
				c.add(h)
				break
			}
		}
	}
}

func (c *checker) entryMap(u *entryUse) ssa.Value {
	switch at := u.at.(type) {
	case *ssa.Lookup:
		return at.X
	case *ssa.Call:
		return at.Common().Args[0]
	}
	return nil
}

func (c *checker) delMap(d *entryDel) ssa.Value {
	return d.at.(*ssa.Call).Common().Args[0]
}

func (c *checker) entryPos(u *entryUse) token.Pos {
	if l, ok := u.at.(*ssa.Lookup); ok {
		return c.indexStart(l.Pos())
	}
	return c.posOf(u.at)
}

// indexStart maps an index expression's bracket to the start of the
// expression: m of m[k].
func (c *checker) indexStart(pos token.Pos) token.Pos {
	for _, f := range c.pass.Files {
		if f.Pos() > pos || f.End() < pos {
			continue
		}
		start := pos
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil || n.Pos() > pos || n.End() < pos {
				return false
			}
			if ix, ok := n.(*ast.IndexExpr); ok && ix.Lbrack == pos {
				start = ix.Pos()
				return false
			}
			return true
		})
		return start
	}
	return pos
}

func (c *checker) entryPair(d *entryDel, u *entryUse) *hint {
	uS, uExt := c.contexts(u.fn)
	dS, dExt := c.contexts(d.fn)
	if uExt {
		uS = append(uS, nil)
	}
	if dExt {
		dS = append(dS, nil)
	}
	what := "an entry of " + d.text
	verb := "is deleted"
	if d.index == nil {
		what, verb = "the entries of "+d.text, "are deleted"
	}
	upos := c.entryPos(u)
	for _, cu := range uS {
		for _, cd := range dS {
			if cu == nil && cd == nil {
				continue // both on callers' goroutines: their order is the callers'
			}
			if cu == cd || sameRoots(cu, cd) || c.pairOrdered(u.fn, u.at, false, cu, d.fn, d.at, false, cd) {
				continue
			}
			if (cd != nil && holdsAny(c.locksAt(u.at), c.handoff(cd))) || (cu != nil && holdsAny(c.locksAt(d.at), c.handoff(cu))) {
				continue
			}
			h := &hint{
				kind: KindUseAfterDispose,
				pair: [2]token.Pos{c.posOf(d.at), upos},
			}
			h.pos = c.posOf(d.at)
			if cu != nil {
				h.msg = "possible use-after-dispose: " + what + " " + verb + " in " + c.funcName(d.fn) +
					" while the goroutine started at " + c.posString(c.posOf(cu.at)) + " may look it up at " +
					c.posString(upos) + " and dereference it without checking that it is there"
				h.related = []analysis.RelatedInformation{
					c.relatedAt(upos, "the goroutine looks the entry up here and dereferences it"),
					c.related(cu.at, "the goroutine starts here"),
				}
			} else {
				h.msg = "possible use-after-dispose: " + what + " " + verb + " by the goroutine started at " + c.posString(c.posOf(cd.at)) +
					" (in " + c.funcName(d.fn) + ") while " + c.funcName(u.fn) + " may look it up at " + c.posString(upos) +
					" and dereference it without checking that it is there"
				h.related = []analysis.RelatedInformation{
					c.relatedAt(upos, c.funcName(u.fn)+" looks the entry up here and dereferences it"),
					c.related(cd.at, "the goroutine starts here"),
				}
			}
			return h
		}
	}
	return nil
}

// lazyEntry reports whether another lookup of the entry, checked for nil,
// stores the entry when it is missing, before the use on every path: if
// m[k] == nil { m[k] = v }; m[k].f.
func (c *checker) lazyEntry(f *funcInfo, other *ssa.Lookup, u *entryUse) bool {
	iff, nilSucc := nilBranch(other)
	if iff == nil || !iff.Block().Dominates(u.at.Block()) || len(nilSucc.Preds) != 1 {
		return false
	}
	for _, b := range u.fn.Blocks {
		if !nilSucc.Dominates(b) {
			continue
		}
		for _, in := range b.Instrs {
			if mu, ok := in.(*ssa.MapUpdate); ok && sameKey(mu.Key, u.index) && sameSlot(mapSlot(mu.Map), mapSlot(other.X)) {
				return true
			}
		}
	}
	return false
}
