// Package bifrostsend follows the race reproducer of maximhq/bifrost PR #2732
// (https://github.com/maximhq/bifrost/pull/2732, core/bifrost_test.go): a
// producer that "mirrors the hot path in tryRequest" checks that the
// provider queue is not closing, then sends a request on the queue, while
// shutdown marks the queue closing and closes it. The test's producer
// goroutine recovers the panic and reports "send on closed channel" with
// t.Errorf, so the test fails without a crash. In every delay-free run the
// producer's sends come milliseconds before the shutdown; a producer delayed
// between its check and its send sends on the closed queue. The closing flag
// is an atomic.Bool: `go test -race` stays silent.
//
// Kind: use-after-dispose (send on q.ch, then close(q.ch)); the panic is
// recovered by the test.
package bifrostsend

import (
	"errors"
	"sync/atomic"
)

// ErrClosing is returned by TryRequest once shutdown began.
var ErrClosing = errors.New("provider queue is closing")

// Request is one request for a provider.
type Request struct{ ID int }

// Queue is a provider's request queue.
type Queue struct {
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
	if q.closing.Load() {
		return ErrClosing
	}
	q.ch <- r // BUG: the queue may be closed since the check
	return nil
}

// Shutdown stops the queue and waits for its worker.
func (q *Queue) Shutdown() {
	q.closing.Store(true)
	close(q.ch)
	<-q.done
}
