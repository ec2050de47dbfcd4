package vet

import (
	"golang.org/x/tools/go/ssa"
)

// This file holds the orders the analyzer can prove between two events in
// different goroutines: a join (the goroutine signals after its event, the
// other side waits for that signal before its own), program order around a
// go statement, and mutual exclusion.

// inGoroutine reports whether fn may run on the goroutine s starts.
func (s *spawn) runs(fn *ssa.Function) bool {
	_, ok := s.reach[fn]
	return ok
}

// contexts returns the goroutines of the package fn may run on, and
// whether it may run on a goroutine the package does not start (called
// from outside the package, or by a test).
func (c *checker) contexts(fn *ssa.Function) (spawns []*spawn, ext bool) {
	for _, s := range c.spawns {
		if s.runs(fn) {
			spawns = append(spawns, s)
		}
	}
	return spawns, c.ext[fn]
}

// joinAfter returns what the goroutine s surely signals after at (in fn)
// executed: channels it closes or sends on, WaitGroups it calls Done on,
// in its function after the call that led to at, or deferred there.
func (c *checker) joinAfter(s *spawn, fn *ssa.Function, at ssa.Instruction) map[key]bool {
	var out map[key]bool
	for _, r := range s.roots {
		var entries []ssa.Instruction
		if fn == r {
			entries = []ssa.Instruction{at}
		} else {
			for _, e := range s.reach[fn] {
				if e.Parent() == r {
					entries = append(entries, e)
				}
			}
		}
		if len(entries) == 0 {
			continue
		}
		keys := map[key]bool{}
		fr := c.fi(r)
		after := func(x ssa.Instruction) bool {
			for _, e := range entries {
				if !fr.postDominates(x, e) {
					return false
				}
			}
			return true
		}
		for _, sig := range fr.signals {
			// A send is its own signal: the receive that takes it comes
			// after it.
			if sig.deferred || sig.at == at || after(sig.at) {
				keys[sig.k] = true
			}
		}
		for _, b := range r.Blocks {
			for _, in := range b.Instrs {
				call, ok := in.(*ssa.Call)
				if !ok || len(c.callees[call]) != 1 || !after(in) {
					continue
				}
				for k := range c.mustSignal(c.callees[call][0], 0) {
					keys[k] = true
				}
			}
		}
		// What the event's own function signals after it counts too (the
		// goroutine handles a request and then answers it).
		if fn != r {
			fe := c.fi(fn)
			for _, sig := range fe.signals {
				if sig.deferred || sig.at == at || fe.postDominates(sig.at, at) {
					keys[sig.k] = true
				}
			}
			for _, b := range fn.Blocks {
				for _, in := range b.Instrs {
					call, ok := in.(*ssa.Call)
					if !ok || len(c.callees[call]) != 1 || !fe.postDominates(in, at) {
						continue
					}
					for k := range c.mustSignal(c.callees[call][0], 0) {
						keys[k] = true
					}
				}
			}
		}
		// A WaitGroup the goroutine adds to itself orders nothing: Wait
		// may return before the Add.
		for fn2 := range s.reach {
			for _, op := range c.fi(fn2).wg {
				if op.op != "Add" {
					continue
				}
				if a, ok := op.k.local.(*ssa.Alloc); ok && a.Parent() == fn2 && fn2 == s.fn {
					// The goroutine calls its starter again (through a func
					// value): that call adds to a WaitGroup of its own.
					continue
				}
				delete(keys, op.k)
			}
		}
		// WaitGroup.Go adds before it starts the goroutine and calls Done
		// when it returns.
		if call, ok := s.at.(*ssa.Call); ok {
			if pkg, typ, name := calleeName(call.Common()); pkg == "sync" && typ == "WaitGroup" && name == "Go" {
				if k := c.ptrKey(call.Common().Args[0]); k.valid() {
					keys[k] = true
				}
			}
		}
		if out == nil {
			out = keys
		} else {
			for k := range out {
				if !keys[k] {
					delete(out, k)
				}
			}
		}
	}
	return out
}

// waitedBefore reports whether fn waits for one of keys before at (for a
// deferred at: before every return).
func (c *checker) waitedBefore(fn *ssa.Function, at ssa.Instruction, deferred bool, keys map[key]bool) bool {
	if len(keys) == 0 {
		return false
	}
	f := c.fi(fn)
	targets := []ssa.Instruction{at}
	if deferred {
		targets = nil
		for _, b := range fn.Blocks {
			if len(b.Instrs) > 0 {
				if r, ok := b.Instrs[len(b.Instrs)-1].(*ssa.Return); ok {
					targets = append(targets, r)
				}
			}
		}
	}
	if len(targets) == 0 {
		return false
	}
	for _, w := range f.waits {
		if !keys[w.k] {
			continue
		}
		all := true
		for _, t := range targets {
			if w.cond != nil {
				if !w.cond.Dominates(t.Block()) {
					all = false
				}
			} else if !f.dominates(w.at, t) {
				all = false
			}
		}
		if all {
			return true
		}
	}
	return false
}

// orderedAfter reports whether at (in fn) surely executes after the
// goroutine s signalled one of keys, or before s started: fn waits for
// the signal first, or fn started s only after at, or so does every call
// of fn (looked up a few callers deep).
func (c *checker) orderedAfter(fn *ssa.Function, at ssa.Instruction, deferred bool, keys map[key]bool, s *spawn, depth int) bool {
	if c.waitedBefore(fn, at, deferred, keys) {
		return true
	}
	if s != nil && fn == s.fn && !deferred && !c.mayPrecede(c.fi(fn), s.at, at) {
		return true
	}
	if depth >= maxSummary || !c.allCallersKnown(fn) {
		return false
	}
	for _, site := range c.callers[fn] {
		if _, isGo := site.(*ssa.Go); isGo {
			return false
		}
		_, isDefer := site.(*ssa.Defer)
		if !c.orderedAfter(site.Parent(), site, isDefer, keys, s, depth+1) {
			return false
		}
	}
	return true
}

// joinedBy returns where the starter of goroutine s waits for it to end:
// a wait for a signal the goroutine gives when it returns (a deferred
// wg.Done, a close at its end) that every path from the go statement to
// the starter's return passes. nil: the starter may return first.
func (c *checker) joinedBy(s *spawn) *wait {
	if w, ok := c.memoJoined[s]; ok {
		return w
	}
	c.memoJoined[s] = nil // a recursive question: not joined
	var keys map[key]bool
	for _, r := range s.roots {
		if len(r.Blocks) == 0 || len(r.Blocks[0].Instrs) == 0 {
			return nil
		}
		k := c.joinAfter(s, r, r.Blocks[0].Instrs[0])
		if keys == nil {
			keys = k
			continue
		}
		for x := range keys {
			if !k[x] {
				delete(keys, x)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	f := c.fi(s.fn)
	for _, w := range f.waits {
		if w.cond == nil && keys[w.k] && f.postDominates(w.at, s.at) {
			c.memoJoined[s] = w
			return w
		}
	}
	return nil
}
