// Package bifrostsend is the fixed twin of ../: the check and the send run
// under a read lock that Shutdown takes for writing before it closes the
// queue, so no send can follow the close.
package bifrostsend

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrClosing is returned by TryRequest once shutdown began.
var ErrClosing = errors.New("provider queue is closing")

// Request is one request for a provider.
type Request struct{ ID int }

// Queue is a provider's request queue.
type Queue struct {
	mu      sync.RWMutex
	closing atomic.Bool
	ch      chan *Request
	done    chan struct{}
	served  atomic.Int64
}

// NewQueue starts a queue with its worker.
func NewQueue(size int) *Queue {
	q := &Queue{ch: make(chan *Request, size), done: make(chan struct{})}
	go q.work()
	return q
}

func (q *Queue) work() {
	defer close(q.done)
	for range q.ch {
		q.served.Add(1)
	}
}

// TryRequest queues r unless the queue is closing.
func (q *Queue) TryRequest(r *Request) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closing.Load() {
		return ErrClosing
	}
	q.ch <- r
	return nil
}

// Shutdown stops the queue and waits for its worker.
func (q *Queue) Shutdown() {
	q.mu.Lock()
	q.closing.Store(true)
	close(q.ch)
	q.mu.Unlock()
	<-q.done
}
