// Package informer follows kubernetes issue #57209 and the fix applied across
// controllers (e.g. kubernetes-retired/service-catalog PR #1446: "Create
// listers before adding event handlers in controller"); the controller below
// is a reconstruction of that pattern.
//
// A controller registers its event handler on an informer that is already
// running, and only then sets the lister the handler reads from. When the
// informer's initial LIST completes, it calls the handler on its own goroutine;
// the handler does c.lister.Get. Normally the lister was set long before the
// LIST returns; if the controller goroutine is slow, the handler dereferences a
// nil *Lister. The accesses are ordered by the informer mutex in normal runs
// (NewController's caller polls HasSynced), so `go test -race` stays silent.
//
// Kind: use-before-init (init c.lister in NewController, use in onAdd).
package informer

import (
	"sort"
	"sync"
	"time"
)

// Object is a cached API object.
type Object struct {
	Key      string
	Replicas int
}

// Store is the informer's thread-safe cache.
type Store struct {
	mu    sync.RWMutex
	items map[string]*Object
}

func (s *Store) add(o *Object) {
	s.mu.Lock()
	s.items[o.Key] = o
	s.mu.Unlock()
}

func (s *Store) get(key string) (*Object, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.items[key]
	return o, ok
}

func (s *Store) list() []*Object {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Object, 0, len(s.items))
	for _, o := range s.items {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Informer lists objects from the API server (with a simulated round-trip
// latency) and delivers them to its event handlers.
type Informer struct {
	store       *Store
	source      []*Object
	listLatency time.Duration
	done        chan struct{}

	mu       sync.Mutex
	handlers []func(*Object)
	synced   bool
}

// NewInformer returns an informer over objs.
func NewInformer(objs []*Object, listLatency time.Duration) *Informer {
	return &Informer{
		store:       &Store{items: make(map[string]*Object)},
		source:      objs,
		listLatency: listLatency,
		done:        make(chan struct{}),
	}
}

// Run starts the informer's goroutine.
func (inf *Informer) Run() { go inf.run() }

func (inf *Informer) run() {
	defer close(inf.done)
	time.Sleep(inf.listLatency) // LIST round trip
	for _, o := range inf.source {
		inf.store.add(o)
	}
	inf.mu.Lock()
	inf.synced = true
	hs := append([]func(*Object){}, inf.handlers...)
	inf.mu.Unlock()
	for _, o := range inf.source {
		for _, h := range hs {
			h(o)
		}
	}
}

// AddEventHandler registers h. A handler added after the initial LIST gets
// the cached objects replayed on the caller's goroutine.
func (inf *Informer) AddEventHandler(h func(*Object)) {
	inf.mu.Lock()
	inf.handlers = append(inf.handlers, h)
	replay := inf.synced
	inf.mu.Unlock()
	if replay {
		for _, o := range inf.store.list() {
			h(o)
		}
	}
}

// HasSynced reports whether the initial LIST has completed.
func (inf *Informer) HasSynced() bool {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	return inf.synced
}

// Done is closed when the informer goroutine has delivered every object.
func (inf *Informer) Done() <-chan struct{} { return inf.done }

// Lister reads objects from an informer's cache.
type Lister struct{ store *Store }

// Get returns the cached object for key.
func (l *Lister) Get(key string) (*Object, bool) { return l.store.get(key) }

// Controller counts the replicas of every object it has seen.
type Controller struct {
	lister *Lister

	mu   sync.Mutex
	seen map[string]int
}

// NewController wires a controller to a running informer.
func NewController(inf *Informer) *Controller {
	c := &Controller{seen: make(map[string]int)}
	inf.AddEventHandler(c.onAdd)
	c.lister = &Lister{store: inf.store} // BUG: handler registered first
	return c
}

func (c *Controller) onAdd(o *Object) {
	cur, ok := c.lister.Get(o.Key)
	if !ok {
		return
	}
	c.mu.Lock()
	c.seen[cur.Key] = cur.Replicas
	c.mu.Unlock()
}

// WaitForCacheSync polls until the informer has synced.
func WaitForCacheSync(inf *Informer) {
	for !inf.HasSynced() {
		time.Sleep(100 * time.Microsecond)
	}
}

// Seen returns the replica count per key seen by the controller.
func (c *Controller) Seen() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.seen))
	for k, v := range c.seen {
		out[k] = v
	}
	return out
}
