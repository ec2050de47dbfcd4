// Package natsconsumer follows the pattern of nats-server PR #5012: a
// reference taken under a lock and used after the lock is released while
// another goroutine disposes it. The consumer/stream setting below is a
// reconstruction of that pattern, not the PR's code.
//
// The consumer's goroutine takes a reference to its stream under the consumer
// lock, releases the lock, and then calls mset.store.State() without holding
// the stream lock. Deleting the stream sets mset.store to nil under the stream
// lock. Normally the consumer computes its pending count right after it starts,
// long before the stream is deleted; if the consumer goroutine is slow, it
// dereferences the nil store.
//
// Kind: use-after-dispose (use mset.store after unlocking, dispose in stop).
//
// This is the fixed twin: the store is read under the stream lock and checked
// for nil before use.
package natsconsumer

import (
	"sync"
)

// StreamState is a snapshot of a stream's store.
type StreamState struct {
	Msgs     uint64
	LastSeq  uint64
	Subjects int
}

type memStore struct {
	mu       sync.Mutex
	msgs     uint64
	subjects map[string]int
}

func (ms *memStore) store(subject string) uint64 {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.msgs++
	ms.subjects[subject]++
	return ms.msgs
}

// State returns a snapshot of the store.
func (ms *memStore) State() StreamState {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return StreamState{Msgs: ms.msgs, LastSeq: ms.msgs, Subjects: len(ms.subjects)}
}

// Stream is a JetStream stream.
type Stream struct {
	Name string

	mu        sync.RWMutex
	store     *memStore
	consumers []*Consumer
}

// NewStream returns an empty in-memory stream.
func NewStream(name string) *Stream {
	return &Stream{Name: name, store: &memStore{subjects: make(map[string]int)}}
}

// Publish stores a message and returns its sequence number.
func (mset *Stream) Publish(subject string) uint64 {
	mset.mu.RLock()
	defer mset.mu.RUnlock()
	return mset.store.store(subject)
}

// Consumer is a stream consumer with its own goroutine.
type Consumer struct {
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	mset    *Stream
	pending uint64
}

// AddConsumer creates a consumer and starts its goroutine.
func (mset *Stream) AddConsumer() *Consumer {
	o := &Consumer{mset: mset, quit: make(chan struct{}), done: make(chan struct{})}
	mset.mu.Lock()
	mset.consumers = append(mset.consumers, o)
	mset.mu.Unlock()
	go o.loop()
	return o
}

func (o *Consumer) loop() {
	defer close(o.done)
	o.checkPending() // initial num pending
	<-o.quit
}

func (o *Consumer) checkPending() {
	o.mu.Lock()
	mset := o.mset
	o.mu.Unlock()
	if mset == nil {
		return
	}
	mset.mu.RLock()
	st := mset.store
	mset.mu.RUnlock()
	if st == nil {
		return // stream stopped
	}
	state := st.State()
	o.mu.Lock()
	o.pending = state.Msgs
	o.mu.Unlock()
}

// Done is closed when the consumer goroutine has exited.
func (o *Consumer) Done() <-chan struct{} { return o.done }

// Delete stops the stream and its consumers and releases the store.
func (mset *Stream) Delete() {
	mset.mu.Lock()
	mset.store = nil
	cs := mset.consumers
	mset.consumers = nil
	mset.mu.Unlock()
	for _, o := range cs {
		o.mu.Lock()
		o.mset = nil
		o.mu.Unlock()
		close(o.quit)
	}
}
