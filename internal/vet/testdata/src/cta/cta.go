// Package cta holds check-then-act cases: a close guarded by a check of
// the same state outside one critical section.
package cta

import (
	"sync"
	"sync/atomic"
)

// Positive: an isClosed helper (select with a default), then close, in an
// exported Close; negative twin: both under one mutex.
type session struct{ closeCh chan struct{} }

func (s *session) isClosed() bool {
	select {
	case <-s.closeCh:
		return true
	default:
		return false
	}
}

func (s *session) Close() {
	if s.isClosed() {
		return
	}
	close(s.closeCh) // want `possible double close: s.closeCh is closed after a check of s.closeCh at cta.go:\d+ outside one critical section with the close; \(\*session\).Close may run twice concurrently`
}

type session2 struct {
	mu      sync.Mutex
	closeCh chan struct{}
}

func (s *session2) isClosed() bool {
	select {
	case <-s.closeCh:
		return true
	default:
		return false
	}
}

func (s *session2) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed() {
		return
	}
	close(s.closeCh)
}

// Positive: an atomic closed flag checked, set later, then the close.
type consumer struct {
	closed atomic.Bool
	quit   chan struct{}
}

func (o *consumer) Delete() {
	if o.closed.Load() {
		return
	}
	o.closed.Store(true)
	close(o.quit) // want `possible double close: o.quit is closed after a check of o.closed at cta.go:\d+ outside one critical section with the change at cta.go:\d+`
}

// Negative: CompareAndSwap checks and sets in one step.
type consumer2 struct {
	closed atomic.Bool
	quit   chan struct{}
}

func (o *consumer2) Delete() {
	if !o.closed.CompareAndSwap(false, true) {
		return
	}
	close(o.quit)
}

// Negative: a drain loop's select with a default is no closed check.
type queue struct{ ch chan int }

func (q *queue) Close() {
	for {
		select {
		case <-q.ch:
			continue
		default:
		}
		break
	}
	close(q.ch)
}

// Positive: a send after a closed-flag check, while Close sets the flag
// and closes the channel; negative twin: a lock over both.
type sender struct {
	closing atomic.Bool
	ch      chan int
}

func (s *sender) Send(v int) {
	if s.closing.Load() {
		return
	}
	s.ch <- v // want `possible send on closed channel: s.ch may be closed by \(\*sender\).Close between the check of s.closing at cta.go:\d+ and this send`
}

func (s *sender) Close() {
	s.closing.Store(true)
	close(s.ch)
}

type sender2 struct {
	mu      sync.RWMutex
	closing bool
	ch      chan int
}

func (s *sender2) Send(v int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closing {
		return
	}
	select {
	case s.ch <- v:
	default:
	}
}

func (s *sender2) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	close(s.ch)
}

// Positive: a comma-ok lookup under the read lock, the delete under the
// write lock, then the close; negative twin: lookup and delete under one
// lock.
type manager struct {
	mu    sync.RWMutex
	chans map[string]chan int
}

func (m *manager) CloseChannel(id string) {
	m.mu.RLock()
	ch, ok := m.chans[id]
	m.mu.RUnlock()
	if !ok {
		return
	}
	m.mu.Lock()
	delete(m.chans, id)
	m.mu.Unlock()
	close(ch) // want `possible double close: ch is closed after a check of m.chans at cta.go:\d+`
}

type manager2 struct {
	mu    sync.RWMutex
	chans map[string]chan int
}

func (m *manager2) CloseChannel(id string) {
	m.mu.Lock()
	ch, ok := m.chans[id]
	if ok {
		delete(m.chans, id)
	}
	m.mu.Unlock()
	if ok {
		close(ch)
	}
}
