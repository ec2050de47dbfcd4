// Package natsdelete follows nats-server issue #1621 / PR #1622
// (https://github.com/nats-io/nats-server/pull/1622, "Fixed possible panic
// on consumer.Delete() during server Shutdown()"): Delete checked whether
// the consumer was already closed, then sent the delete advisory (which
// releases and re-acquires the consumer's lock) and only afterwards marked
// it closed and closed its quit channel. The server's shutdown and an API
// request deleted the same consumer; a second Delete that checked before the
// first one had marked the consumer closed closed the quit channel again:
// "close of closed channel". Here the closed flag is an atomic.Bool, so
// `go test -race` stays silent; in every delay-free run the API request comes
// milliseconds after the shutdown's Delete finished and sees the flag set.
//
// Kind: check-then-act (check: o.closed.Load(), act: close(o.qch)).
package natsdelete

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by Delete on a consumer already deleted.
var ErrClosed = errors.New("consumer closed")

// Consumer is a JetStream consumer.
type Consumer struct {
	mu         sync.Mutex
	name       string
	closed     atomic.Bool
	qch        chan struct{}
	advisories []string
}

// Stream holds consumers.
type Stream struct {
	mu        sync.Mutex
	consumers map[string]*Consumer
}

// NewStream returns a stream with the named consumers, each with its loop
// running until the consumer is deleted.
func NewStream(names ...string) (*Stream, *sync.WaitGroup) {
	s := &Stream{consumers: map[string]*Consumer{}}
	var wg sync.WaitGroup
	for _, n := range names {
		o := &Consumer{name: n, qch: make(chan struct{})}
		s.consumers[n] = o
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-o.qch
		}()
	}
	return s, &wg
}

// Lookup returns the named consumer.
func (s *Stream) Lookup(name string) *Consumer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consumers[name]
}

// Delete deletes the consumer.
func (o *Consumer) Delete() error {
	if o.closed.Load() {
		return ErrClosed
	}
	o.sendDeleteAdvisory()
	o.closed.Store(true) // BUG: marked closed long after the check
	close(o.qch)
	return nil
}

// sendDeleteAdvisory takes and releases the consumer's lock, as the
// server's sendAdvisory does.
func (o *Consumer) sendDeleteAdvisory() {
	o.mu.Lock()
	o.advisories = append(o.advisories, "$JS.EVENT.ADVISORY.CONSUMER.DELETED."+o.name)
	o.mu.Unlock()
}

// Shutdown deletes every consumer of the stream.
func (s *Stream) Shutdown() {
	s.mu.Lock()
	all := make([]*Consumer, 0, len(s.consumers))
	for _, o := range s.consumers {
		all = append(all, o)
	}
	s.mu.Unlock()
	for _, o := range all {
		o.Delete()
	}
}
