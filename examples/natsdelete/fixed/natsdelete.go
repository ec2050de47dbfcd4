// Package natsdelete is the fixed twin of ../: Delete holds the consumer's
// delete lock from its check to the close (PR #1622 marks the consumer
// closed at the start of Delete, under its lock), so a second Delete always
// sees the consumer closed.
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
	deleteMu   sync.Mutex
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
	o.deleteMu.Lock()
	defer o.deleteMu.Unlock()
	if o.closed.Load() {
		return ErrClosed
	}
	o.sendDeleteAdvisory()
	o.closed.Store(true)
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
