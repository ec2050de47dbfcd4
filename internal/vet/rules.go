package vet

import (
	"go/token"
	"go/types"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ssa"
)

// The kinds of hints, as they appear in messages and as diagnostic
// categories.
const (
	KindUseBeforeInit   = "use-before-init"
	KindUseAfterDispose = "use-after-dispose"
	KindCheckThenAct    = "check-then-act"
	KindWaitGroup       = "waitgroup"
)

type hint struct {
	kind    string
	pair    [2]token.Pos // the two accesses: dispose and use, init and use, check and act, Add and Done
	pos     token.Pos
	msg     string
	related []analysis.RelatedInformation
	fixes   []analysis.SuggestedFix
	callers bool // both accesses on the callers' goroutines (a lock only one side takes)
}

func (c *checker) add(h *hint) {
	for _, o := range c.hints {
		if o.pos == h.pos && o.kind == h.kind {
			return
		}
	}
	c.hints = append(c.hints, h)
}

func (c *checker) checkPos(cs *checkSite) token.Pos {
	if cs.pos.IsValid() {
		return c.exprStart(cs.pos)
	}
	return c.posOf(cs.at)
}

func (c *checker) usePos(u *use) token.Pos {
	if u.pos.IsValid() {
		return c.exprStart(u.pos)
	}
	return c.posOf(u.at)
}

func (c *checker) relatedAt(pos token.Pos, msg string) analysis.RelatedInformation {
	return analysis.RelatedInformation{Pos: pos, Message: msg}
}

func (c *checker) pair(a, b ssa.Instruction) [2]token.Pos {
	return [2]token.Pos{c.posOf(a), c.posOf(b)}
}

func (c *checker) related(in ssa.Instruction, msg string) analysis.RelatedInformation {
	return analysis.RelatedInformation{Pos: c.posOf(in), Message: msg}
}

// index is what the rules look up by slot.
type index struct {
	uses   map[key][]*use
	stores map[key][]*store
	loads  map[key][]*ssa.Function // functions that read the slot
	ctor   map[key]bool            // set on a new object before it is shared
}

func (c *checker) run() {
	c.disposed = map[key]bool{}
	ix := &index{uses: map[key][]*use{}, stores: map[key][]*store{}, loads: map[key][]*ssa.Function{}, ctor: map[key]bool{}}
	for _, fn := range c.funcs {
		f := c.fi(fn)
		for _, u := range f.uses {
			ix.uses[u.k] = append(ix.uses[u.k], u)
		}
		for _, s := range f.stores {
			if !s.k.valid() {
				continue
			}
			if s.dispose && !s.close {
				c.disposed[s.k] = true
			}
			ix.stores[s.k] = append(ix.stores[s.k], s)
			if !s.dispose && s.fresh {
				ix.ctor[s.k] = true
			}
		}
		seen := map[key]bool{}
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				if ld, ok := in.(*ssa.UnOp); ok && ld.Op == token.MUL {
					if k := c.slotKey(ld.X); k.valid() && !seen[k] {
						seen[k] = true
						ix.loads[k] = append(ix.loads[k], fn)
					}
				}
			}
		}
	}
	for _, us := range ix.uses {
		sort.Slice(us, func(i, j int) bool { return us[i].at.Pos() < us[j].at.Pos() })
	}
	c.useAfterDispose(ix)
	c.mapEntries()
	c.useBeforeInit(ix)
	c.initByGoroutine(ix)
	c.checkThenAct()
	c.checkThenSend()
	c.waitGroups()
}

// loadAddr returns the address a use reads: the load's operand, or the
// atomic's receiver.
func loadAddr(in ssa.Instruction) ssa.Value {
	switch in := in.(type) {
	case *ssa.UnOp:
		return in.X
	case *ssa.Call:
		if len(in.Common().Args) > 0 {
			return in.Common().Args[0]
		}
	}
	return nil
}

func storeAddr(in ssa.Instruction) ssa.Value {
	switch in := in.(type) {
	case *ssa.Store:
		return in.Addr
	case ssa.CallInstruction:
		if len(in.Common().Args) > 0 {
			return in.Common().Args[0]
		}
	}
	return nil
}

// sameSlot reports whether two addresses name the slot of one object:
// the same field of the same SSA value, or the same variable.
func sameSlot(a, b ssa.Value) bool {
	return sameValue(a, b, 0)
}

// sameValue reports whether two values are the same object or address:
// identical, or the same field of the same value, or loads of the same
// variable (a captured receiver is loaded from its cell at every use).
func sameValue(a, b ssa.Value, depth int) bool {
	if a == nil || b == nil || depth > 4 {
		return false
	}
	if a == b {
		return true
	}
	switch x := a.(type) {
	case *ssa.FieldAddr:
		y, ok := b.(*ssa.FieldAddr)
		return ok && x.Field == y.Field && sameValue(x.X, y.X, depth+1)
	case *ssa.UnOp:
		y, ok := b.(*ssa.UnOp)
		if !ok || x.Op != token.MUL || y.Op != token.MUL {
			return false
		}
		switch x.X.(type) {
		case *ssa.FreeVar, *ssa.Alloc, *ssa.Global:
			return x.X == y.X
		}
	}
	return false
}

// useFresh reports whether a use reads a field of an object its function
// made and has not shared yet.
func (c *checker) useFresh(u *use) bool {
	var addr ssa.Value
	if u.send {
		if send, ok := u.at.(*ssa.Send); ok {
			if ld, ok := send.Chan.(*ssa.UnOp); ok && ld.Op == token.MUL {
				addr = ld.X
			}
		}
	} else {
		addr = loadAddr(u.at)
	}
	return addr != nil && c.fresh(addr, u.at)
}

// guarded reports whether a use cannot see nil for another reason: its
// function stored a non-nil value to the slot before, or checked another
// read of the slot for nil (and set it when it was nil, or read both times
// in one critical section).
func (c *checker) guarded(u *use) bool {
	if u.send {
		return false
	}
	f := c.fi(u.fn)
	addr := loadAddr(u.at)
	for _, s := range f.stores {
		if !s.dispose && s.k == u.k && sameSlot(storeAddr(s.at), addr) && f.dominates(s.at, u.at) {
			return true
		}
	}
	if c.mapGuarded(u) {
		return true
	}
	for _, b := range u.fn.Blocks {
		for _, in := range b.Instrs {
			if in == u.at || !sameSlot(loadAddr(in), addr) {
				continue
			}
			v, ok := in.(ssa.Value)
			if !ok {
				continue
			}
			if ld, ok := in.(*ssa.UnOp); ok && ld.Op != token.MUL {
				continue
			}
			iff, nilSucc := nilBranch(v)
			if iff == nil {
				continue
			}
			nonNil := iff.Block().Succs[0]
			if nonNil == nilSucc {
				nonNil = iff.Block().Succs[1]
			}
			// Another read checked for nil: enough when both reads are in
			// one critical section, or when nothing ever sets the slot
			// back to nil (once non-nil, it stays so).
			if len(nonNil.Preds) == 1 && nonNil.Dominates(u.at.Block()) && (c.oneSection(in, u.at) || !c.disposed[u.k]) {
				return true
			}
			if iff.Block().Dominates(u.at.Block()) {
				// if x.f == nil { x.f = v }: lazily set.
				for _, s := range f.stores {
					if !s.dispose && s.k == u.k && len(nilSucc.Preds) == 1 && nilSucc.Dominates(s.at.Block()) {
						return true
					}
				}
			}
		}
	}
	return false
}

// oneSection reports whether a and b are in one critical section of
// some lock (read or write).
func (c *checker) oneSection(a, b ssa.Instruction) bool {
	la, lb := c.locksAt(a), c.locksAt(b)
	for _, x := range la {
		if lb.has(x) {
			return true
		}
	}
	return false
}

func otherContext(spawns []*spawn, ext bool, s *spawn) bool {
	if ext {
		return true
	}
	for _, o := range spawns {
		if o != s {
			return true
		}
	}
	return false
}

// useAfterDispose pairs every nil store and close with the uses of the
// same slot that may run on another goroutine, unordered.
func (c *checker) useAfterDispose(ix *index) {
	for _, fn := range c.funcs {
		for _, d := range c.fi(fn).stores {
			if !d.dispose || d.fresh || !d.k.valid() {
				continue
			}
			var fallback *hint
			for _, u := range ix.uses[d.k] {
				if u.send != d.close || c.sameCall(u.fn, d.fn) || c.oneActivation(d.k, d.fn, u.fn) {
					continue
				}
				if c.useFresh(u) || c.guarded(u) || c.commonLock(u.at, d.at) || c.flagGuardedSend(u, d.fn) {
					continue
				}
				if plainStruct(storeAddr(d.at)) && c.plainOwner(d.k, u.fn) && c.plainOwner(d.k, d.fn) {
					continue // a plain data structure: its users synchronize
				}
				if !sameOwner(useAddr(u), storeAddr(d.at)) {
					continue
				}
				h := c.disposePair(d, u)
				if h == nil {
					continue
				}
				if !h.callers {
					fallback = nil
					c.add(h)
					break
				}
				if fallback == nil {
					fallback = h
				}
			}
			// A use on a goroutine the package starts is the stronger
			// pair; a use on the callers' goroutine that skips the
			// dispose's lock is reported when there is none.
			if fallback != nil {
				c.add(fallback)
			}
		}
	}
}

func (c *checker) disposeWords(d *store) (verb, useVerb string) {
	if d.close {
		return "is closed", "send on it"
	}
	return "is set to nil", "read it"
}

func (c *checker) disposePair(d *store, u *use) *hint {
	if c.disposeAnswers(d, u) {
		return nil
	}
	uS, uExt := c.contexts(u.fn)
	dS, dExt := c.contexts(d.fn)
	verb, useVerb := c.disposeWords(d)
	if uExt {
		uS = append(uS, nil)
	}
	if dExt {
		dS = append(dS, nil)
	}
	for _, cu := range uS {
		for _, cd := range dS {
			if cu == cd || sameRoots(cu, cd) || c.pairOrdered(u.fn, u.at, false, cu, d.fn, d.at, d.deferred, cd) {
				continue
			}
			if (cd != nil && holdsAny(c.locksAt(u.at), c.handoff(cd))) || (cu != nil && holdsAny(c.locksAt(d.at), c.handoff(cu))) {
				continue
			}
			if cu != nil {
				return &hint{
					kind: KindUseAfterDispose,
					pair: [2]token.Pos{c.posOf(d.at), c.usePos(u)},
					pos:  c.posOf(d.at),
					msg: "possible use-after-dispose: " + d.text + " " + verb + " in " + c.funcName(d.fn) +
						" while the goroutine started at " + c.posString(c.posOf(cu.at)) + " may " + useVerb + " at " + c.posString(c.usePos(u)),
					related: []analysis.RelatedInformation{
						c.relatedAt(c.usePos(u), "the goroutine may "+useVerb+" here"),
						c.related(cu.at, "the goroutine starts here"),
					},
				}
			}
			return &hint{
				kind: KindUseAfterDispose,
				pair: [2]token.Pos{c.posOf(d.at), c.usePos(u)},
				pos:  c.posOf(d.at),
				msg: "possible use-after-dispose: " + d.text + " " + verb + " by the goroutine started at " + c.posString(c.posOf(cd.at)) +
					" (in " + c.funcName(d.fn) + ") while " + c.funcName(u.fn) + " may " + useVerb + " at " + c.posString(c.usePos(u)),
				related: []analysis.RelatedInformation{
					c.relatedAt(c.usePos(u), c.funcName(u.fn)+" may "+useVerb+" here"),
					c.related(cd.at, "the goroutine starts here"),
				},
			}
		}
	}
	// Both on goroutines the caller chooses: a lock around the dispose that
	// the use does not take says the two are meant to run concurrently.
	if len(uS) == 1 && len(dS) == 1 && uExt && dExt {
		for _, h := range c.locksAt(d.at) {
			if !h.write {
				continue
			}
			return &hint{
				kind:    KindUseAfterDispose,
				callers: true,
				pair:    [2]token.Pos{c.posOf(d.at), c.usePos(u)},
				pos:     c.posOf(d.at),
				msg: "possible use-after-dispose: " + d.text + " " + verb + " in " + c.funcName(d.fn) + " under " + c.lockName(h) +
					", while " + c.funcName(u.fn) + " may " + useVerb + " at " + c.posString(c.usePos(u)) + " without holding it",
				related: []analysis.RelatedInformation{
					c.relatedAt(c.usePos(u), c.funcName(u.fn)+" may "+useVerb+" here without the lock"),
				},
			}
		}
	}
	return nil
}

// pairOrdered reports whether event a (in fa, on goroutine ca; nil: a
// caller's) and event b (in fb, on cb) are ordered: one of them runs on a
// goroutine that signals after it while the other waits for the signal
// first, or the other happens before that goroutine starts.
func (c *checker) pairOrdered(fa *ssa.Function, a ssa.Instruction, aDeferred bool, ca *spawn,
	fb *ssa.Function, b ssa.Instruction, bDeferred bool, cb *spawn) bool {
	if ca != nil && c.orderedAfter(fb, b, bDeferred, c.joinAfter(ca, fa, a), ca, 0) {
		return true
	}
	if cb != nil && c.orderedAfter(fa, a, aDeferred, c.joinAfter(cb, fb, b), cb, 0) {
		return true
	}
	// One side stops the other's goroutine and waits for it to take the
	// request: a send on an unbuffered channel the goroutine returns on.
	if ca != nil && c.stopsBefore(fb, b, bDeferred, ca) {
		return true
	}
	if cb != nil && c.stopsBefore(fa, a, aDeferred, cb) {
		return true
	}
	// One side happens before the other's goroutine starts.
	if ca != nil && !bDeferred && c.spawnedAfter(ca, fb, b, 0) {
		return true
	}
	if cb != nil && !aDeferred && c.spawnedAfter(cb, fa, a, 0) {
		return true
	}
	return false
}

// spawnedAfter reports whether goroutine s starts only after at (in fn)
// executed: fn starts it after at, or starts (a few levels up) the
// goroutine that starts it.
func (c *checker) spawnedAfter(s *spawn, fn *ssa.Function, at ssa.Instruction, depth int) bool {
	if s.fn == fn {
		return c.fi(fn).dominates(at, s.at)
	}
	if depth >= maxSummary {
		return false
	}
	// at is in a function the spawner calls before the go statement.
	for _, site := range c.callers[fn] {
		if _, ok := site.(*ssa.Call); ok && c.spawnedAfter(s, site.Parent(), site, depth+1) {
			return true
		}
	}
	outer, ext := c.contexts(s.fn)
	if ext || len(outer) == 0 {
		return false
	}
	for _, o := range outer {
		if o == s || !c.spawnedAfter(o, fn, at, depth+1) {
			return false
		}
	}
	return true
}

func (c *checker) lockName(h held) string {
	if call, ok := h.acq.(*ssa.Call); ok && len(call.Common().Args) > 0 {
		return c.text(call.Common().Args[0])
	}
	return c.keyName(h.k)
}

func (c *checker) keyName(k key) string {
	switch {
	case k.field != nil:
		return k.field.Name()
	case k.global != nil:
		return k.global.Name()
	case k.local != nil:
		return c.text(k.local)
	}
	return "?"
}

// A publication hands code to another goroutine: the goroutines a call
// starts (directly or in the package's functions it calls), or func values
// a call registers in a field that a running goroutine reads and calls.
type publication struct {
	at    ssa.Instruction
	spawn *spawn // nil: a registered func value
	reach map[*ssa.Function][]ssa.Instruction
}

func (c *checker) publications(in ssa.Instruction) []publication {
	var out []publication
	for _, s := range c.startedBy(in) {
		if s.at != in && c.joinedBy(s) != nil {
			continue // the call waits for it to end before it returns
		}
		out = append(out, publication{at: in, spawn: s, reach: s.reach})
	}
	call, ok := in.(*ssa.Call)
	if !ok || c.spawnsAt[in] != nil {
		return out
	}
	callee := call.Common().StaticCallee()
	if callee == nil || !c.inPkg[callee] {
		return out
	}
	for i, a := range call.Common().Args {
		fns := c.funcValues(a)
		if len(fns) == 0 {
			continue
		}
		h := c.registeredField(callee, i, 0)
		if !h.valid() || !c.readByGoroutine(h) {
			continue
		}
		out = append(out, publication{at: in, reach: c.reachFrom(fns, nil)})
	}
	return out
}

// registeredField returns the field that fn stores its parameter i in
// (directly, appended to a slice, or through another call), if any.
func (c *checker) registeredField(fn *ssa.Function, i, depth int) key {
	if i >= len(fn.Params) || depth > 2 {
		return key{}
	}
	vals := []ssa.Value{fn.Params[i]}
	for n := 0; n < len(vals) && n < 8; n++ {
		v := vals[n]
		refs := v.Referrers()
		if refs == nil {
			continue
		}
		for _, r := range *refs {
			switch r := r.(type) {
			case *ssa.Store:
				if r.Val != v {
					continue
				}
				// Stored in an object the caller can see (not one the
				// function makes: newStreamsMap(..., c.queueFrame) is
				// no registration with a running goroutine).
				switch rootOf(r.Addr).(type) {
				case *ssa.Parameter, *ssa.Global:
					if k := c.slotKey(r.Addr); k.valid() {
						return k
					}
				}
				// append(x.hs, h): h goes into the array of a slice
				// literal first.
				if ia, ok := r.Addr.(*ssa.IndexAddr); ok {
					if alloc, ok := ia.X.(*ssa.Alloc); ok && alloc.Referrers() != nil {
						for _, r2 := range *alloc.Referrers() {
							if sl, ok := r2.(*ssa.Slice); ok {
								vals = append(vals, sl)
							}
						}
					}
				}
			case *ssa.Call:
				if b, ok := r.Common().Value.(*ssa.Builtin); ok {
					if b.Name() == "append" {
						vals = append(vals, r)
					}
					continue
				}
				if t := r.Common().StaticCallee(); t != nil && c.inPkg[t] {
					for j, a := range r.Common().Args {
						if a == v {
							if k := c.registeredField(t, j, depth+1); k.valid() {
								return k
							}
						}
					}
				}
			case *ssa.Slice:
				vals = append(vals, r)
			case *ssa.ChangeType:
				vals = append(vals, r)
			case *ssa.MakeInterface:
				vals = append(vals, r)
			}
		}
	}
	return key{}
}

// readByGoroutine reports whether a goroutine the package starts reads
// slot k itself (not through its go statement's arguments).
func (c *checker) readByGoroutine(k key) bool {
	for _, s := range c.spawns {
		for fn := range s.reach {
			for _, b := range fn.Blocks {
				for _, in := range b.Instrs {
					if ld, ok := in.(*ssa.UnOp); ok && ld.Op == token.MUL && c.slotKey(ld.X) == k {
						return true
					}
				}
			}
		}
	}
	return false
}

// useBeforeInit finds inits that come after a publication in the same
// function when the published code may use the slot: go s.loop(); s.h = x.
func (c *checker) useBeforeInit(ix *index) {
	for _, fn := range c.funcs {
		f := c.fi(fn)
		for _, b := range fn.Blocks {
			for _, p := range b.Instrs {
				if _, ok := p.(ssa.CallInstruction); !ok {
					continue
				}
				if _, ok := p.(*ssa.Defer); ok {
					continue
				}
				pubs := c.publications(p)
				if len(pubs) == 0 {
					continue
				}
				c.initsAfter(ix, f, p, pubs)
			}
		}
	}
}

type initAt struct {
	k    key
	at   ssa.Instruction // the store, or the call in f that leads to it
	init ssa.Instruction // the store
	text string
}

// initsOf returns the inits f makes at instruction in: a store, or a call
// of a function that may store (bounded).
func (c *checker) initsOf(f *funcInfo, in ssa.Instruction, p ssa.Instruction) []initAt {
	var out []initAt
	for _, s := range f.stores {
		if s.at == in && !s.dispose && !s.fresh && (p == nil || c.existsBefore(f, rootOf(storeAddr(in)), p)) {
			out = append(out, initAt{k: s.k, at: in, init: in, text: s.text})
		}
	}
	if call, ok := in.(*ssa.Call); ok && c.spawnsAt[in] == nil {
		for _, t := range c.callees[call] {
			for k, is := range c.mayInit(t, 0) {
				if p != nil && is.param >= 0 &&
					(is.param >= len(call.Common().Args) || !c.existsBefore(f, rootOf(call.Common().Args[is.param]), p)) {
					continue // an object made after the goroutine started
				}
				out = append(out, initAt{k: k, at: in, init: is.at, text: c.storeText(is.at)})
			}
		}
	}
	// mayInit is a map: report the same init every run.
	sort.SliceStable(out, func(i, j int) bool { return out[i].init.Pos() < out[j].init.Pos() })
	return out
}

func (c *checker) storeText(in ssa.Instruction) string {
	for _, s := range c.fi(in.Parent()).stores {
		if s.at == in {
			return s.text
		}
	}
	return "the field"
}

func (c *checker) initsAfter(ix *index, f *funcInfo, p ssa.Instruction, pubs []publication) {
	// Slots set on every path before the publication are not at stake.
	before := map[key]bool{}
	for _, b := range f.fn.Blocks {
		for _, in := range b.Instrs {
			if in != p && f.dominates(in, p) {
				for _, ia := range c.initsOf(f, in, nil) {
					before[ia.k] = true
				}
			}
		}
	}
	for _, b := range f.fn.Blocks {
		for _, in := range b.Instrs {
			if in == p || !c.mayPrecede(f, p, in) {
				continue
			}
			for _, ia := range c.initsOf(f, in, p) {
				if before[ia.k] || ix.ctor[ia.k] {
					continue
				}
				// What f signals after the init: a goroutine that waits for
				// it before its use is ordered after the init.
				after := map[key]bool{}
				for _, sig := range f.signals {
					if sig.deferred || f.postDominates(sig.at, ia.at) {
						after[sig.k] = true
					}
				}
				// A lock held from the publication through the init keeps
				// out a goroutine that takes it before its use.
				var section lockset
				for _, h := range c.locksAt(p) {
					if c.locksAt(ia.at).has(h) {
						section = append(section, h)
					}
				}
				for _, pub := range pubs {
					u := c.publishedUse(ix, ia.k, pub, after, ia.init.Parent())
					if u == nil {
						continue
					}
					if holdsAny(c.locksAt(u.at), section) {
						continue
					}
					c.add(c.initHint(f, p, pub, ia, u))
					break
				}
			}
		}
	}
}

func (c *checker) publishedUse(ix *index, k key, pub publication, after map[key]bool, initFn *ssa.Function) *use {
	for _, u := range ix.uses[k] {
		if u.send || c.oneActivation(k, initFn, u.fn) {
			continue
		}
		if _, ok := pub.reach[u.fn]; !ok {
			continue
		}
		if c.useFresh(u) || c.guarded(u) || c.selfInit(u) || c.orderedAfter(u.fn, u.at, false, after, nil, 0) {
			continue
		}
		return u
	}
	return nil
}

func (c *checker) initHint(f *funcInfo, p ssa.Instruction, pub publication, ia initAt, u *use) *hint {
	where := "in " + c.funcName(f.fn)
	if ia.init != ia.at {
		where = "in " + c.funcName(ia.init.Parent()) + ", called at " + c.posString(c.posOf(ia.at))
	}
	what := "after the goroutine started at " + c.posString(c.posOf(p))
	if pub.spawn != nil && pub.spawn.at != p {
		what = "after the call at " + c.posString(c.posOf(p)) + " started the goroutine at " + c.posString(c.posOf(pub.spawn.at))
	}
	relMsg := "the goroutine starts here"
	if pub.spawn == nil {
		what = "after " + c.funcName(u.fn) + " was handed at " + c.posString(c.posOf(p)) + " to a goroutine that calls it"
		relMsg = "handed to another goroutine here"
	}
	h := &hint{
		kind: KindUseBeforeInit,
		pair: [2]token.Pos{c.posOf(ia.init), c.usePos(u)},
		pos:  c.posOf(ia.at),
		msg: "possible use-before-init: " + ia.text + " is set " + where + " only " + what +
			", which may read it at " + c.posString(c.usePos(u)),
		related: []analysis.RelatedInformation{
			c.related(p, relMsg),
			c.relatedAt(c.usePos(u), "read here, maybe before it is set"),
		},
	}
	if ia.init != ia.at {
		h.related = append(h.related, c.related(ia.init, "set here"))
	}
	if fix := c.swapFix(p, ia.at, "set "+ia.text+" before handing it to the goroutine"); fix != nil {
		h.fixes = append(h.fixes, *fix)
	}
	return h
}

// initByGoroutine finds slots that only goroutines the package starts
// set, while other code dereferences them without waiting for that.
func (c *checker) initByGoroutine(ix *index) {
	keys := make([]key, 0, len(ix.stores))
	for k := range ix.stores {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return ix.stores[keys[i]][0].at.Pos() < ix.stores[keys[j]][0].at.Pos()
	})
	for _, k := range keys {
		if ix.ctor[k] {
			continue
		}
		var inits []*store
		var by []*spawn
		ok := true
		for _, s := range ix.stores[k] {
			if s.dispose {
				continue
			}
			spawns, ext := c.contexts(s.fn)
			if ext || len(spawns) == 0 {
				ok = false
				break
			}
			inits = append(inits, s)
			by = append(by, spawns...)
		}
		if !ok || len(inits) == 0 {
			continue
		}
	uses:
		for _, u := range ix.uses[k] {
			if u.send {
				continue
			}
			for _, s := range by {
				if s.runs(u.fn) {
					continue uses
				}
			}
			if c.useFresh(u) || c.guarded(u) || c.selfInit(u) {
				continue
			}
			same := true
			for _, in := range inits {
				same = same && c.oneActivation(k, in.fn, u.fn)
			}
			if same {
				continue // one call's variable, on that call's goroutine
			}
			uS, uExt := c.contexts(u.fn)
			if len(uS) == 0 && !uExt {
				continue // nothing the analyzer knows calls it
			}
			if uExt {
				uS = append(uS, nil)
			}
			for _, in := range inits {
				spawns, _ := c.contexts(in.fn)
				for _, s := range spawns {
					joins := c.joinAfter(s, in.fn, in.at)
					if c.spawnerWaits(s, joins) || c.offersWait(u.fn, c.replyAfter(in.fn, in.at)) {
						continue
					}
					if u.fn == s.fn && !c.mayPrecede(c.fi(u.fn), s.at, u.at) {
						continue // before the goroutine starts: not a race
					}
					if holdsAny(c.locksAt(u.at), c.handoff(s)) {
						continue // the goroutine runs inside its starter's critical section
					}
					ordered := false
					for _, cu := range uS {
						if c.pairOrdered(in.fn, in.at, false, s, u.fn, u.at, false, cu) {
							ordered = true
						}
					}
					if ordered {
						continue
					}
					c.add(&hint{
						kind: KindUseBeforeInit,
						pair: [2]token.Pos{c.posOf(in.at), c.usePos(u)},
						pos:  c.posOf(in.at),
						msg: "possible use-before-init: " + in.text + " is set only by the goroutine started at " + c.posString(c.posOf(s.at)) +
							" (in " + c.funcName(in.fn) + "), while " + c.funcName(u.fn) + " may read it at " + c.posString(c.usePos(u)) + " before it is set",
						related: []analysis.RelatedInformation{
							c.relatedAt(c.usePos(u), "read here, maybe before it is set"),
							c.related(s.at, "the goroutine starts here"),
						},
					})
					continue uses
				}
			}
		}
	}
}

// replyAfter returns what fn signals after at other than at its end: the
// answer to a request (req.x = v; req.respond(err)).
func (c *checker) replyAfter(fn *ssa.Function, at ssa.Instruction) map[key]bool {
	f := c.fi(fn)
	keys := map[key]bool{}
	for _, sig := range f.signals {
		if !sig.deferred && f.postDominates(sig.at, at) {
			keys[sig.k] = true
		}
	}
	for _, b := range fn.Blocks {
		for _, in := range b.Instrs {
			call, ok := in.(*ssa.Call)
			if !ok || len(c.callees[call]) != 1 || !f.postDominates(in, at) {
				continue
			}
			for k := range c.mustSignal(c.callees[call][0], 0) {
				keys[k] = true
			}
		}
	}
	return keys
}

// offersWait reports whether fn is a method of a type whose exported
// methods wait for one of keys (a future: its Error or Wait returns once
// the goroutine answered): the caller is expected to wait through it
// before using the result.
func (c *checker) offersWait(fn *ssa.Function, keys map[key]bool) bool {
	recv := fn.Signature.Recv()
	if recv == nil || len(keys) == 0 {
		return false
	}
	t := recv.Type()
	if _, ok := t.(*types.Pointer); !ok {
		t = types.NewPointer(t)
	}
	mset := c.pkg.Prog.MethodSets.MethodSet(t)
	for i := 0; i < mset.Len(); i++ {
		sel := mset.At(i)
		if !sel.Obj().Exported() {
			continue
		}
		m := c.pkg.Prog.MethodValue(sel)
		if m == nil {
			continue
		}
		m = unbound(m)
		if !c.inPkg[m] {
			// A promoted method's wrapper calls the embedded one.
			for _, b := range m.Blocks {
				for _, in := range b.Instrs {
					if call, ok := in.(*ssa.Call); ok {
						if callee := call.Common().StaticCallee(); callee != nil && c.inPkg[unbound(callee)] {
							m = unbound(callee)
						}
					}
				}
			}
		}
		if !c.inPkg[m] {
			continue
		}
		for k := range c.mustWait(m, 0) {
			if keys[k] {
				return true
			}
		}
	}
	return false
}

// spawnerWaits reports whether the function that starts s waits for one
// of keys after starting it, on every path: it returns only once the
// goroutine signalled.
func (c *checker) spawnerWaits(s *spawn, keys map[key]bool) bool {
	if len(keys) == 0 {
		return false
	}
	f := c.fi(s.fn)
	for _, w := range f.waits {
		if keys[w.k] && w.cond == nil && f.postDominates(w.at, s.at) {
			return true
		}
	}
	return false
}

// A check of state a function may act on: a closed flag, a select with a
// default on a channel, a nil check, a comma-ok lookup.
type checkSite struct {
	kind string // flag, select, nil, lookup
	k    key
	at   ssa.Instruction
	iff  *ssa.If
	text string
	pos  token.Pos // the check itself when at calls a helper that makes it
}

func (c *checker) checksIn(fn *ssa.Function) []*checkSite {
	var out []*checkSite
	for _, b := range fn.Blocks {
		iff, ok := b.Instrs[len(b.Instrs)-1].(*ssa.If)
		if !ok {
			continue
		}
		if cs := c.classifyCheck(iff.Cond, 0); cs != nil {
			cs.iff = iff
			out = append(out, cs)
		}
	}
	return out
}

func (c *checker) classifyCheck(v ssa.Value, depth int) *checkSite {
	if depth > 2 {
		return nil
	}
	switch v := v.(type) {
	case *ssa.UnOp:
		if v.Op == token.NOT {
			return c.classifyCheck(v.X, depth+1)
		}
		if v.Op == token.MUL && isBool(v.Type()) {
			if k := c.slotKey(v.X); k.field != nil {
				return &checkSite{kind: "flag", k: k, at: v, text: c.text(v.X)}
			}
		}
	case *ssa.Call:
		pkg, typ, name := calleeName(v.Common())
		if pkg == "sync/atomic" && typ == "Bool" && name == "Load" {
			if k := c.slotKey(v.Common().Args[0]); k.valid() {
				return &checkSite{kind: "flag", k: k, at: v, text: c.text(v.Common().Args[0])}
			}
		}
		if callee := v.Common().StaticCallee(); callee != nil && c.inPkg[callee] {
			if k, text, sel := c.selectCheck(callee); k.valid() {
				return &checkSite{kind: "select", k: k, at: v, text: text, pos: recvPos(sel)}
			}
		}
	case *ssa.BinOp:
		if v.Op != token.EQL && v.Op != token.NEQ {
			return nil
		}
		other := v.X
		if isNilConst(v.X) {
			other = v.Y
		} else if !isNilConst(v.Y) {
			if ex, ok := v.X.(*ssa.Extract); ok && ex.Index == 0 {
				if sel, ok := ex.Tuple.(*ssa.Select); ok && !sel.Blocking {
					if k, text := c.selectRecv(sel); k.valid() {
						return &checkSite{kind: "select", k: k, at: sel, text: text, pos: recvPos(sel)}
					}
				}
			}
			return nil
		}
		switch o := other.(type) {
		case *ssa.UnOp:
			if o.Op == token.MUL && refType(o.Type()) {
				if k := c.slotKey(o.X); k.valid() {
					return &checkSite{kind: "nil", k: k, at: o, text: c.text(o.X)}
				}
			}
		case *ssa.Call:
			if k, op := c.atomicCall(o.Common()); k.valid() && op == "Load" {
				return &checkSite{kind: "nil", k: k, at: o, text: c.text(o.Common().Args[0])}
			}
		}
	case *ssa.Extract:
		if lk, ok := v.Tuple.(*ssa.Lookup); ok && v.Index == 1 && lk.CommaOk {
			if ld, ok := lk.X.(*ssa.UnOp); ok && ld.Op == token.MUL {
				if k := c.slotKey(ld.X); k.valid() {
					return &checkSite{kind: "lookup", k: k, at: lk, text: c.text(ld.X)}
				}
			}
		}
	}
	return nil
}

func isBool(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.Bool
}

// selectCheck recognizes isClosed helpers: a function whose select with a
// default receives from a channel.
func (c *checker) selectCheck(fn *ssa.Function) (key, string, *ssa.Select) {
	if r := fn.Signature.Results(); r.Len() != 1 || !isBool(r.At(0).Type()) {
		return key{}, "", nil
	}
	for _, b := range fn.Blocks {
		for _, in := range b.Instrs {
			if sel, ok := in.(*ssa.Select); ok && !sel.Blocking {
				k, text := c.selectRecv(sel)
				return k, text, sel
			}
		}
	}
	return key{}, "", nil
}

func (c *checker) selectRecv(sel *ssa.Select) (key, string) {
	for _, st := range sel.States {
		if st.Dir == types.RecvOnly {
			if k := c.objKey(st.Chan); k.valid() {
				return k, c.text(st.Chan)
			}
		}
	}
	return key{}, ""
}

// guards reports whether the check decides whether in runs: one branch
// reaches it, the other does not (a drain loop's select reaches the close
// either way).
func (c *checker) guards(f *funcInfo, iff *ssa.If, in ssa.Instruction) bool {
	succs := iff.Block().Succs
	reach := func(b *ssa.BasicBlock) bool {
		return b == in.Block() || c.mayPrecede(f, b.Instrs[0], in)
	}
	return reach(succs[0]) != reach(succs[1])
}

// strictlyAfter reports whether in executes only after iff branched.
func strictlyAfter(iff *ssa.If, in ssa.Instruction) bool {
	return in.Block() != iff.Block() && iff.Block().Dominates(in.Block())
}

// transition returns the instruction after the check that changes the
// state checked: the close itself, setting the flag, storing non-nil,
// deleting the entry.
func (c *checker) transition(f *funcInfo, cs *checkSite) ssa.Instruction {
	for _, b := range f.fn.Blocks {
		for _, in := range b.Instrs {
			if !strictlyAfter(cs.iff, in) {
				continue
			}
			switch cs.kind {
			case "select":
				for _, s := range f.stores {
					if s.at == in && s.close && s.k == cs.k {
						return in
					}
				}
			case "nil":
				for _, s := range f.stores {
					if s.at == in && !s.dispose && s.k == cs.k {
						return in
					}
				}
			case "flag":
				if st, ok := in.(*ssa.Store); ok && isTrue(st.Val) && c.slotKey(st.Addr) == cs.k {
					return in
				}
				if call, ok := in.(*ssa.Call); ok {
					pkg, typ, name := calleeName(call.Common())
					if pkg == "sync/atomic" && typ == "Bool" && name == "Store" && isTrue(call.Common().Args[1]) &&
						c.slotKey(call.Common().Args[0]) == cs.k {
						return in
					}
				}
			case "lookup":
				if call, ok := in.(*ssa.Call); ok {
					if bi, ok := call.Common().Value.(*ssa.Builtin); ok && bi.Name() == "delete" {
						if ld, ok := call.Common().Args[0].(*ssa.UnOp); ok && ld.Op == token.MUL && c.slotKey(ld.X) == cs.k {
							return in
						}
					}
				}
			}
		}
	}
	return nil
}

func isTrue(v ssa.Value) bool {
	k, ok := v.(*ssa.Const)
	return ok && k.Value != nil && k.Value.String() == "true"
}

var closeWords = []string{"close", "stop", "shutdown", "delete", "cancel", "terminate", "release",
	"disconnect", "unsubscribe", "destroy", "dispose", "teardown", "abort", "kill", "remove", "quit", "finish"}

func closeLike(name string) bool {
	if !token.IsExported(name) {
		return false
	}
	l := strings.ToLower(name)
	for _, w := range closeWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// mayRunTwice counts the goroutines fn may run on at once: each goroutine
// the package starts (two if started in a loop), the caller's (two if
// fn, or an exported function that calls it, is named like Close).
func (c *checker) runCount(fn *ssa.Function) (n int, ctxs []*spawn, ext bool) {
	spawns, ext := c.contexts(fn)
	for _, s := range spawns {
		n++
		if s.loop {
			n++
		}
	}
	if ext {
		n++
		if c.closeLikeCaller(fn, 0) {
			n++
		}
	}
	return n, spawns, ext
}

func (c *checker) closeLikeCaller(fn *ssa.Function, depth int) bool {
	if fn.Parent() == nil && closeLike(fn.Name()) {
		return true
	}
	if depth >= 2 {
		return false
	}
	for _, site := range c.callers[fn] {
		if c.ext[site.Parent()] && c.closeLikeCaller(site.Parent(), depth+1) {
			return true
		}
	}
	return false
}

type ctaSite struct {
	cs  *checkSite
	f   *funcInfo
	tr  ssa.Instruction
	act *store
}

// checkThenAct finds closes that follow a check of the same state outside
// one critical section, in functions that may run twice at once.
func (c *checker) checkThenAct() {
	byState := map[key][]*ctaSite{}
	var order []key
	for _, fn := range c.funcs {
		f := c.fi(fn)
		for _, cs := range c.checksIn(fn) {
			tr := c.transition(f, cs)
			if tr == nil || c.sameSection(cs.at, tr) {
				continue
			}
			if cs.kind == "flag" && !c.atomicCheck(cs) && len(c.locksAt(cs.at)) == 0 {
				// A plain bool read without any lock guards against a
				// second call, not a concurrent one.
				continue
			}
			var act *store
			for _, s := range f.stores {
				if s.close && !s.deferred && strictlyAfter(cs.iff, s.at) && c.guards(f, cs.iff, s.at) && !c.madeHere(s) {
					act = s
					break
				}
			}
			if act == nil {
				continue
			}
			if _, ok := byState[cs.k]; !ok {
				order = append(order, cs.k)
			}
			byState[cs.k] = append(byState[cs.k], &ctaSite{cs: cs, f: f, tr: tr, act: act})
		}
	}
	for _, k := range order {
		sites := byState[k]
		n := 0
		seen := map[*ssa.Function]bool{}
		var names []string
		for _, st := range sites {
			if seen[st.f.fn] {
				continue
			}
			seen[st.f.fn] = true
			m, _, _ := c.runCount(st.f.fn)
			n += m
			names = append(names, c.funcName(st.f.fn))
		}
		if n < 2 {
			continue
		}
		why := strings.Join(names, " and ") + " may run concurrently"
		if len(names) == 1 {
			why = names[0] + " may run twice concurrently"
		}
		for _, st := range sites {
			what := "possible double close: " + st.act.text + " is closed after a check of " + st.cs.text +
				" at " + c.posString(c.checkPos(st.cs)) + " outside one critical section with "
			if st.tr == st.act.at {
				what += "the close"
			} else {
				what += "the change at " + c.posString(c.posOf(st.tr))
			}
			h := &hint{
				kind: KindCheckThenAct,
				pair: [2]token.Pos{c.checkPos(st.cs), c.posOf(st.act.at)},
				pos:  c.posOf(st.act.at),
				msg:  what + "; " + why,
				related: []analysis.RelatedInformation{
					c.relatedAt(c.checkPos(st.cs), "checked here"),
				},
			}
			if st.tr != st.act.at {
				h.related = append(h.related, c.related(st.tr, "the state checked changes here"))
			}
			c.add(h)
		}
	}
}

// checkThenSend finds sends guarded by a closed flag that another function
// sets before closing the channel, outside a lock both hold.
func (c *checker) checkThenSend() {
	for _, fn := range c.funcs {
		f := c.fi(fn)
		for _, cs := range c.checksIn(fn) {
			if cs.kind != "flag" {
				continue
			}
			for _, u := range f.uses {
				if !u.send || !strictlyAfter(cs.iff, u.at) || !c.guards(f, cs.iff, u.at) {
					continue
				}
				closer, set, cl := c.flagCloser(fn, cs.k, u.k)
				if closer == nil {
					continue
				}
				// One critical section over the check and the send, and
				// the same lock over the close, or over setting the flag
				// before the close: the send cannot follow the close.
				if c.oneSection(cs.at, u.at) &&
					(c.commonLock(u.at, cl) || (c.commonLock(u.at, set) && c.fi(closer).dominates(set, cl))) {
					continue
				}
				c.add(&hint{
					kind: KindCheckThenAct,
					pair: [2]token.Pos{c.posOf(cl), c.usePos(u)},
					pos:  c.usePos(u),
					msg: "possible send on closed channel: " + u.text + " may be closed by " + c.funcName(closer) +
						" between the check of " + cs.text + " at " + c.posString(c.checkPos(cs)) + " and this send",
					related: []analysis.RelatedInformation{
						c.relatedAt(c.checkPos(cs), "checked here"),
						c.related(cl, "closed here"),
					},
				})
			}
		}
	}
}

// flagCloser finds a function other than fn that sets flag and closes ch.
func (c *checker) flagCloser(fn *ssa.Function, flag, ch key) (closer *ssa.Function, set, cl ssa.Instruction) {
	for _, g := range c.funcs {
		if g == fn {
			continue
		}
		f := c.fi(g)
		var cl ssa.Instruction
		for _, s := range f.stores {
			if s.close && s.k == ch {
				cl = s.at
			}
		}
		if cl == nil {
			continue
		}
		for _, b := range g.Blocks {
			for _, in := range b.Instrs {
				if st, ok := in.(*ssa.Store); ok && isTrue(st.Val) && c.slotKey(st.Addr) == flag {
					return g, in, cl
				}
				if call, ok := in.(*ssa.Call); ok {
					pkg, typ, name := calleeName(call.Common())
					if pkg == "sync/atomic" && typ == "Bool" && name == "Store" && isTrue(call.Common().Args[1]) &&
						c.slotKey(call.Common().Args[0]) == flag {
						return g, in, cl
					}
				}
			}
		}
	}
	return nil, nil, nil
}

// flagGuardedSend reports whether a send is guarded by a closed flag that
// the function closing the channel (g) sets: the check-then-send rule
// judges such a pair.
func (c *checker) flagGuardedSend(u *use, g *ssa.Function) bool {
	if !u.send {
		return false
	}
	f := c.fi(u.fn)
	for _, cs := range c.checksIn(u.fn) {
		if cs.kind != "flag" || !strictlyAfter(cs.iff, u.at) || !c.guards(f, cs.iff, u.at) {
			continue
		}
		if closer, _, _ := c.flagCloser(u.fn, cs.k, u.k); closer == g {
			return true
		}
	}
	return false
}

// waitGroups finds Add calls after the goroutine that calls Done started.
func (c *checker) waitGroups() {
	for _, fn := range c.funcs {
		f := c.fi(fn)
		for _, add := range f.wg {
			if add.op != "Add" {
				continue
			}
			for _, b := range fn.Blocks {
				for _, p := range b.Instrs {
					if p == add.at || !c.mayPrecede(f, p, add.at) {
						continue
					}
					for _, s := range c.startedBy(p) {
						done := c.doneIn(s, add.k)
						if done == nil || c.addBefore(f, add.k, p) || c.doneAfterReceive(s, done) {
							continue
						}
						h := &hint{
							kind: KindWaitGroup,
							pair: c.pair(add.at, done),
							pos:  c.posOf(add.at),
							msg: "possible WaitGroup misuse: " + c.text(add.at.(*ssa.Call).Common().Args[0]) + ".Add is called after the goroutine started at " +
								c.posString(c.posOf(s.at)) + ", which may call Done at " + c.posString(c.posOf(done)) + " first",
							related: []analysis.RelatedInformation{
								c.related(s.at, "the goroutine starts here"),
								c.related(done, "Done here"),
							},
						}
						if s.at != p {
							h.related = append(h.related, c.related(p, "the call that starts it"))
						}
						if fix := c.swapFix(p, add.at, "call Add before starting the goroutine"); fix != nil {
							h.fixes = append(h.fixes, *fix)
						}
						c.add(h)
					}
				}
			}
		}
	}
}

func (c *checker) doneIn(s *spawn, k key) ssa.Instruction {
	fns := make([]*ssa.Function, 0, len(s.reach))
	for fn := range s.reach {
		fns = append(fns, fn)
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].Pos() < fns[j].Pos() })
	for _, fn := range fns {
		for _, op := range c.fi(fn).wg {
			if op.op == "Done" && op.k == k {
				return op.at
			}
		}
	}
	return nil
}

// addBefore reports whether an Add on k comes before p on every path.
func (c *checker) addBefore(f *funcInfo, k key, p ssa.Instruction) bool {
	for _, op := range f.wg {
		if op.op == "Add" && op.k == k && f.dominates(op.at, p) {
			return true
		}
	}
	return false
}

func (c *checker) atomicCheck(cs *checkSite) bool {
	_, ok := cs.at.(*ssa.Call)
	return ok
}

// stopsBefore reports whether fn, before at, sends on an unbuffered
// channel that goroutine s receives from only to return: once the send
// completed, s does nothing more.
func (c *checker) stopsBefore(fn *ssa.Function, at ssa.Instruction, deferred bool, s *spawn) bool {
	if deferred {
		return false
	}
	f := c.fi(fn)
	for _, u := range f.uses {
		if !u.send || !f.dominates(u.at, at) || !c.unbuffered(u.k) {
			continue
		}
		for _, r := range s.roots {
			if c.returnsOn(r, u.k) {
				return true
			}
		}
	}
	return false
}

// returnsOn reports whether fn receives from k and every such receive
// leads to its return without receiving again.
func (c *checker) returnsOn(fn *ssa.Function, k key) bool {
	f := c.fi(fn)
	found := false
	for _, w := range f.waits {
		if w.k != k {
			continue
		}
		if _, ok := w.at.(*ssa.Call); ok {
			continue // a WaitGroup or a called function's wait
		}
		found = true
		start := w.at
		if w.cond != nil {
			start = w.cond.Instrs[0]
		}
		if c.mayPrecede(f, start, w.at) {
			return false // it goes on receiving
		}
	}
	return found
}

// unbuffered reports whether every channel stored to k is made without
// a buffer.
func (c *checker) unbuffered(k key) bool {
	if mc, ok := k.local.(*ssa.MakeChan); ok {
		return isZero(mc.Size)
	}
	if k.field == nil && k.global == nil {
		return false
	}
	n := 0
	for _, fn := range c.funcs {
		for _, st := range c.fi(fn).stores {
			if st.k != k || st.dispose {
				continue
			}
			store, ok := st.at.(*ssa.Store)
			if !ok {
				return false
			}
			mc, ok := store.Val.(*ssa.MakeChan)
			if !ok || !isZero(mc.Size) {
				return false
			}
			n++
		}
	}
	return n > 0
}

func isZero(v ssa.Value) bool {
	k, ok := v.(*ssa.Const)
	return ok && k.Value != nil && k.Value.String() == "0"
}

// plainOwner reports whether fn is a method of a struct that has nothing
// to synchronize with (no mutex, atomic, channel, WaitGroup) and runs no
// goroutine of its own: a list or a buffer whose callers hold the lock,
// whose objects a field-based analysis cannot tell apart.
func (c *checker) plainOwner(k key, fn *ssa.Function) bool {
	if k.field == nil {
		return false
	}
	recv := fn.Signature.Recv()
	if recv == nil {
		return false
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return false
	}
	for _, s := range c.spawns {
		for _, r := range s.roots {
			if rr := r.Signature.Recv(); rr != nil && types.Identical(rr.Type(), recv.Type()) {
				return false // the type runs goroutines of its own
			}
		}
	}
	for i := 0; i < st.NumFields(); i++ {
		if syncType(st.Field(i).Type()) {
			return false
		}
	}
	return true
}

func syncType(t types.Type) bool {
	if _, ok := t.Underlying().(*types.Chan); ok {
		return true
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil {
		switch n.Obj().Pkg().Path() {
		case "sync", "sync/atomic":
			return true
		}
	}
	return false
}

// useAddr returns the address a use reads: the slot, or for a send the
// slot the channel was loaded from.
func useAddr(u *use) ssa.Value {
	if send, ok := u.at.(*ssa.Send); ok {
		if ld, ok := send.Chan.(*ssa.UnOp); ok && ld.Op == tokenMUL {
			return ld.X
		}
		return nil
	}
	return loadAddr(u.at)
}

// plainStruct reports whether the struct a field address points into has
// nothing to synchronize with.
func plainStruct(addr ssa.Value) bool {
	fa, ok := addr.(*ssa.FieldAddr)
	if !ok {
		return false
	}
	p, ok := fa.X.Type().Underlying().(*types.Pointer)
	if !ok {
		return false
	}
	st, ok := p.Elem().Underlying().(*types.Struct)
	if !ok {
		return false
	}
	for i := 0; i < st.NumFields(); i++ {
		if syncType(st.Field(i).Type()) {
			return false
		}
	}
	return true
}

// recvPos is where a select's receive case is: the case the check takes.
func recvPos(sel *ssa.Select) token.Pos {
	for _, st := range sel.States {
		if st.Dir == types.RecvOnly && st.Pos.IsValid() {
			return st.Pos
		}
	}
	return sel.Pos()
}

// selfInit reports whether the use's function sets the slot itself (if
// f.x == nil { f.buf = ...; f.x = ... }; f.buf.Write(...)): it lazily
// initializes what it uses, under whatever check it chose.
func (c *checker) selfInit(u *use) bool {
	addr := loadAddr(u.at)
	for _, s := range c.fi(u.fn).stores {
		if !s.dispose && s.k == u.k && sameSlot(storeAddr(s.at), addr) {
			return true
		}
	}
	return false
}

// sameRoots reports whether two goroutines run the same function: two
// instances of a per-connection or per-request goroutine, which a
// field-based analysis cannot tell apart but which mostly own different
// objects.
func sameRoots(a, b *spawn) bool {
	if a == nil || b == nil {
		return false
	}
	for _, r := range a.roots {
		for _, q := range b.roots {
			if r == q {
				return true
			}
		}
	}
	return false
}

// mapGuarded reports whether a map write can only happen on a non-nil
// map: after a comma-ok lookup of the same map found the key, or inside a
// range over it (a nil map has no keys).
func (c *checker) mapGuarded(u *use) bool {
	mu, ok := u.deref.(*ssa.MapUpdate)
	if !ok {
		return false
	}
	addr := loadAddr(u.at)
	for _, b := range u.fn.Blocks {
		for _, in := range b.Instrs {
			switch x := in.(type) {
			case *ssa.Lookup:
				ld, ok := x.X.(*ssa.UnOp)
				if !ok || !x.CommaOk || !sameSlot(ld.X, addr) || x.Referrers() == nil {
					continue
				}
				for _, r := range *x.Referrers() {
					ex, ok := r.(*ssa.Extract)
					if !ok || ex.Index != 1 || ex.Referrers() == nil {
						continue
					}
					for _, r2 := range *ex.Referrers() {
						if iff, ok := r2.(*ssa.If); ok {
							t := iff.Block().Succs[0]
							if len(t.Preds) == 1 && t.Dominates(mu.Block()) {
								return true
							}
						}
					}
				}
			case *ssa.Range:
				ld, ok := x.X.(*ssa.UnOp)
				if !ok || !sameSlot(ld.X, addr) || x.Referrers() == nil {
					continue
				}
				for _, r := range *x.Referrers() {
					next, ok := r.(*ssa.Next)
					if !ok || next.Referrers() == nil {
						continue
					}
					for _, r2 := range *next.Referrers() {
						ex, ok := r2.(*ssa.Extract)
						if !ok || ex.Index != 0 || ex.Referrers() == nil {
							continue
						}
						for _, r3 := range *ex.Referrers() {
							if iff, ok := r3.(*ssa.If); ok {
								t := iff.Block().Succs[0]
								if len(t.Preds) == 1 && t.Dominates(mu.Block()) {
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

// disposeAnswers reports whether the dispose follows a receive from the
// channel the use closes: case <-h.closeCalled: h.closeCalled = nil runs
// only once close(h.closeCalled) happened.
func (c *checker) disposeAnswers(d *store, u *use) bool {
	call, ok := u.deref.(*ssa.Call)
	if !ok {
		return false
	}
	b, ok := call.Common().Value.(*ssa.Builtin)
	if !ok || b.Name() != "close" || c.objKey(call.Common().Args[0]) != d.k {
		return false
	}
	return c.waitedBefore(d.fn, d.at, d.deferred, map[key]bool{d.k: true})
}

func holdsAny(s, of lockset) bool {
	for _, x := range s {
		for _, y := range of {
			if x.k == y.k && (x.write || y.write) {
				return true
			}
		}
	}
	return false
}

// madeHere reports whether a close may close a channel its own function
// just made (if ch == nil { ch = make(chan T); close(ch) }).
func (c *checker) madeHere(s *store) bool {
	call, ok := s.at.(ssa.CallInstruction)
	if !ok {
		return false
	}
	for _, o := range c.origins(call.Common().Args[0]) {
		if mc, ok := o.(*ssa.MakeChan); ok && mc.Parent() == s.fn {
			return true
		}
	}
	return false
}

// handoff returns the locks a goroutine inherits: held by its starter at
// the go statement and unlocked by the goroutine (b.lock.Lock(); go
// func() { defer b.lock.Unlock(); ... }()). Whoever takes such a lock
// later runs after the goroutine's work.
func (c *checker) handoff(s *spawn) lockset {
	var out lockset
	for _, h := range c.locksAt(s.at) {
		if !h.write {
			continue
		}
		for _, r := range s.bodies() {
			if c.unlocks(r, h.k) {
				out = append(out, h)
				break
			}
		}
	}
	return out
}

func (c *checker) unlocks(fn *ssa.Function, k key) bool {
	for _, b := range fn.Blocks {
		for _, in := range b.Instrs {
			var common *ssa.CallCommon
			switch x := in.(type) {
			case *ssa.Call:
				common = x.Common()
			case *ssa.Defer:
				common = x.Common()
			default:
				continue
			}
			pkg, typ, name := calleeName(common)
			if pkg == "sync" && (typ == "Mutex" || typ == "RWMutex") && name == "Unlock" && len(common.Args) > 0 && c.ptrKey(common.Args[0]) == k {
				return true
			}
		}
	}
	return false
}

// doneAfterReceive reports whether the goroutine reaches done only after
// receiving something: work the starter sends it after the Add, not a
// Done that can race the Add.
func (c *checker) doneAfterReceive(s *spawn, done ssa.Instruction) bool {
	fn := done.Parent()
	reached := false
	bodies := s.roots
	if len(s.override) > 0 {
		bodies = s.bodies()[:len(s.bodies())-len(s.roots)] // what the wrapper runs
	}
	for _, r := range bodies {
		var entries []ssa.Instruction
		if fn == r {
			entries = []ssa.Instruction{done}
		} else {
			for _, e := range c.reachFrom([]*ssa.Function{r}, nil)[fn] {
				if e.Parent() == r {
					entries = append(entries, e)
				}
			}
		}
		if len(entries) == 0 {
			continue
		}
		reached = true
		f := c.fi(r)
		waited := false
		for _, w := range f.waits {
			if _, isCall := w.at.(*ssa.Call); isCall {
				continue
			}
			all := true
			for _, e := range entries {
				if !f.dominates(w.at, e) && (w.cond == nil || !w.cond.Dominates(e.Block())) {
					all = false
				}
			}
			if all {
				waited = true
			}
		}
		if !waited {
			return false
		}
	}
	return reached
}
