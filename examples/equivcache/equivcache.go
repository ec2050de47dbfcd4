// Package equivcache reproduces kubernetes PR #49352 ("Use the yet
// uninitialized informer factory").
//
// The scheduler's ConfigFactory registers onServiceAdd on the service informer
// and the informers are started before Create() initializes
// factory.equivalencePodCache. When the informer's initial LIST completes it
// calls onServiceAdd, which invalidates the equivalence cache through the
// still-nil pointer. Normally Create() runs long before the LIST returns; if the
// creating goroutine is slow, the informer goroutine dereferences nil.
//
// Kind: use-before-init (init f.equivCache in Create, use in onServiceAdd).
package equivcache

import (
	"sync"
	"time"
)

// EquivalenceCache caches predicate results per equivalence class.
type EquivalenceCache struct {
	mu          sync.Mutex
	invalidated map[string]int
}

// InvalidateCachedPredicateItemOfAllNodes drops the cached results of the
// named predicate on every node.
func (c *EquivalenceCache) InvalidateCachedPredicateItemOfAllNodes(predicate string) {
	c.mu.Lock()
	c.invalidated[predicate]++
	c.mu.Unlock()
}

// Invalidations reports how often predicate was invalidated.
func (c *EquivalenceCache) Invalidations(predicate string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.invalidated[predicate]
}

// ServiceInformer lists services (with a simulated API latency) and calls its
// handlers on its own goroutine.
type ServiceInformer struct {
	services []string
	latency  time.Duration
	handlers []func(string)
	done     chan struct{}
}

// NewServiceInformer returns a stopped informer over services.
func NewServiceInformer(services []string, latency time.Duration) *ServiceInformer {
	return &ServiceInformer{services: services, latency: latency, done: make(chan struct{})}
}

// AddEventHandler registers h; call before Start.
func (i *ServiceInformer) AddEventHandler(h func(string)) { i.handlers = append(i.handlers, h) }

// Start runs the informer.
func (i *ServiceInformer) Start() { go i.run(i.handlers) }

func (i *ServiceInformer) run(hs []func(string)) {
	defer close(i.done)
	time.Sleep(i.latency) // LIST round trip
	for _, s := range i.services {
		for _, h := range hs {
			h(s)
		}
	}
}

// Done is closed once every service has been delivered.
func (i *ServiceInformer) Done() <-chan struct{} { return i.done }

// ConfigFactory builds the scheduler configuration.
type ConfigFactory struct {
	equivCache *EquivalenceCache
}

func (f *ConfigFactory) onServiceAdd(name string) {
	// A new service can change the result of the service-affinity predicate.
	f.equivCache.InvalidateCachedPredicateItemOfAllNodes("CheckServiceAffinity")
}

// Create builds the scheduler's caches.
func (f *ConfigFactory) Create() {
	f.equivCache = &EquivalenceCache{invalidated: make(map[string]int)}
}

// EquivalenceCache returns the factory's cache (after Create).
func (f *ConfigFactory) EquivalenceCache() *EquivalenceCache { return f.equivCache }

// NewScheduler wires a factory to the service informer and starts it.
func NewScheduler(services *ServiceInformer) *ConfigFactory {
	f := &ConfigFactory{}
	services.AddEventHandler(f.onServiceAdd)
	services.Start() // BUG: started before Create initializes the cache
	f.Create()
	return f
}
