// Package entry holds map-entry cases: an entry one goroutine looks up
// and dereferences without checking that it is there, while another
// deletes entries of the map.
package entry

import "sync"

type status struct{ state string }

// Positive: the goroutine looks the entry up after Forget may have
// deleted it; the lock orders the map accesses, not the entry's lifetime.
type racy struct {
	mu sync.Mutex
	m  map[string]*status
}

func (r *racy) Start(k string) {
	r.mu.Lock()
	r.m[k] = &status{}
	r.mu.Unlock()
	go r.finish(k)
}

func (r *racy) finish(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[k].state = "done"
}

func (r *racy) Forget(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k) // want `possible use-after-dispose: an entry of r.m is deleted in \(\*racy\).Forget while the goroutine started at entry.go:\d+ may look it up at entry.go:\d+ and dereference it without checking that it is there`
}

// Negative: the goroutine checks that the entry is still there.
type checked struct {
	mu sync.Mutex
	m  map[string]*status
}

func (r *checked) Start(k string) {
	r.mu.Lock()
	r.m[k] = &status{}
	r.mu.Unlock()
	go r.finish(k)
}

func (r *checked) finish(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.m[k]
	if !ok {
		return
	}
	s.state = "done"
}

func (r *checked) Forget(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// Negative: a nil check of the looked-up value.
type nilChecked struct {
	mu sync.Mutex
	m  map[string]*status
}

func (r *nilChecked) Start(k string) { go r.finish(k) }

func (r *nilChecked) finish(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.m[k]; s != nil {
		s.state = "done"
	}
}

func (r *nilChecked) Forget(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// Negative: Forget waits for the goroutine before it deletes.
type joined struct {
	mu sync.Mutex
	wg sync.WaitGroup
	m  map[string]*status
}

func (r *joined) Start(k string) {
	r.wg.Add(1)
	go r.finish(k)
}

func (r *joined) finish(k string) {
	defer r.wg.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[k].state = "done"
}

func (r *joined) Forget(k string) {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// Negative: the lookup runs inside a range over the map, in one critical
// section: the keys it yields are there.
type ranged struct {
	mu sync.Mutex
	m  map[string]*status
}

func (r *ranged) Start() { go r.sweep() }

func (r *ranged) sweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		r.m[k].state = "swept"
	}
}

func (r *ranged) Forget(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// Negative: both on the callers' goroutines; the package starts none.
type callers struct {
	mu sync.Mutex
	m  map[string]*status
}

func (r *callers) Set(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[k].state = "set"
}

func (r *callers) Forget(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// Negative: the key is a constant, not one the goroutine was handed: an
// entry some invariant keeps.
type otherKey struct {
	mu sync.Mutex
	m  map[string]*status
}

func (r *otherKey) Start() { go r.finish() }

func (r *otherKey) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m["main"].state = "done"
}

func (r *otherKey) Forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, "spare")
}

// Positive: a sync.Map entry asserted without checking the Load's ok,
// while Remove deletes it.
type conn struct{ n int }

func (c *conn) ping() { c.n++ }

type syncRacy struct{ conns sync.Map }

func (r *syncRacy) Start(id int) {
	r.conns.Store(id, &conn{})
	go r.pinger(id)
}

func (r *syncRacy) pinger(id int) {
	v, _ := r.conns.Load(id)
	v.(*conn).ping()
}

func (r *syncRacy) Remove(id int) {
	r.conns.LoadAndDelete(id) // want `possible use-after-dispose: an entry of r.conns is deleted in \(\*syncRacy\).Remove while the goroutine started at entry.go:\d+ may look it up at entry.go:\d+`
}

// Negative: the Load's ok is checked.
type syncChecked struct{ conns sync.Map }

func (r *syncChecked) Start(id int) {
	r.conns.Store(id, &conn{})
	go r.pinger(id)
}

func (r *syncChecked) pinger(id int) {
	v, ok := r.conns.Load(id)
	if !ok {
		return
	}
	v.(*conn).ping()
}

func (r *syncChecked) Remove(id int) { r.conns.Delete(id) }

// Negative: the assertion's own ok is checked.
type syncAsserted struct{ conns sync.Map }

func (r *syncAsserted) Start(id int) { go r.pinger(id) }

func (r *syncAsserted) pinger(id int) {
	v, _ := r.conns.Load(id)
	if c, ok := v.(*conn); ok {
		c.ping()
	}
}

func (r *syncAsserted) Remove(id int) { r.conns.Delete(id) }

// Negative: the entry is made when it is missing, before the use.
type lazy struct {
	mu sync.Mutex
	m  map[string]map[int]bool
}

func (r *lazy) Start(k string) { go r.mark(k, 1) }

func (r *lazy) mark(k string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[k] == nil {
		r.m[k] = map[int]bool{}
	}
	r.m[k][n] = true
}

func (r *lazy) Forget(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// Negative: the looked-up value is replaced when it is nil.
type made struct {
	mu sync.Mutex
	m  map[string]*status
}

func (r *made) Start(k string) { go r.touch(k) }

func (r *made) touch(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.m[k]
	if s == nil {
		s = &status{}
		r.m[k] = s
	}
	s.state = "touched"
}

func (r *made) Forget(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// Negative: the lookup's ok is looked at, through a phi the analyzer does
// not follow: the function handles a missing entry.
type probed struct {
	mu sync.Mutex
	m  map[string]*status
}

func (r *probed) Start(a, b string) { go r.first(a, b) }

func (r *probed) first(a, b string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.m[a]
	if !ok {
		s, ok = r.m[b]
	}
	if !ok {
		return
	}
	s.state = "first"
}

func (r *probed) Forget(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// Positive: the goroutine deletes, while a method the callers run looks
// the entry up unchecked.
type reaper struct {
	mu sync.Mutex
	m  map[string]*status
}

func (r *reaper) Start(k string) { go r.reap(k) }

func (r *reaper) reap(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k) // want `possible use-after-dispose: an entry of r.m is deleted by the goroutine started at entry.go:\d+ \(in \(\*reaper\).reap\) while \(\*reaper\).State may look it up at entry.go:\d+`
}

func (r *reaper) State(k string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[k].state
}
