// Package appinsights is the thesis's Figure 4.2a interference scenario
// (WAFL thesis §4.4, a MEMORDER bug in ApplicationInsights-dotnet), in Go.
//
// A telemetry module's constructor enables its event source, which starts
// delivering events on its own goroutine to OnEventWritten, and only then
// allocates m.lstnr, which OnEventWritten uses. Normally the first event
// arrives long after the allocation; if the constructing goroutine is slow,
// the handler dereferences nil. The same use is also a use-before-dispose
// candidate against Close (m.lstnr = nil), so a detector that delays both the
// allocation and the use for the same time cancels its own delays ("interfering
// bugs"); WAFL skips one of them.
//
// Kind: use-before-init (init m.lstnr in NewModule, use in OnEventWritten).
package appinsights

import (
	"sync"
	"time"
)

// Event is a runtime event (e.g. a GC or thread-pool event).
type Event struct {
	Name string
	Seq  int
}

// EventSource delivers a fixed series of events, one per interval, to the
// enabled callback on its own goroutine.
type EventSource struct {
	events   []Event
	interval time.Duration
	stop     chan struct{}
	done     chan struct{}

	mu        sync.Mutex
	cb        func(Event)
	delivered int
	cond      *sync.Cond
}

// NewEventSource returns a disabled source of n events.
func NewEventSource(n int, interval time.Duration) *EventSource {
	s := &EventSource{interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	for i := 0; i < n; i++ {
		s.events = append(s.events, Event{Name: "GCStart", Seq: i})
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Enable starts delivering events to cb.
func (s *EventSource) Enable(cb func(Event)) {
	s.mu.Lock()
	s.cb = cb
	s.mu.Unlock()
	go s.pump()
}

func (s *EventSource) pump() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for _, e := range s.events {
		select {
		case <-t.C:
		case <-s.stop:
			return
		}
		s.mu.Lock()
		cb := s.cb
		s.mu.Unlock()
		cb(e)
		s.mu.Lock()
		s.delivered++
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// WaitDelivered blocks until n events were delivered.
func (s *EventSource) WaitDelivered(n int) {
	s.mu.Lock()
	for s.delivered < n {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

// Disable stops the source and waits for its goroutine.
func (s *EventSource) Disable() {
	close(s.stop)
	<-s.done
}

type listener struct {
	mu     sync.Mutex
	counts map[string]int
}

func (l *listener) Handle(e Event) {
	l.mu.Lock()
	l.counts[e.Name]++
	l.mu.Unlock()
}

// Module is a telemetry module collecting runtime events.
type Module struct {
	src   *EventSource
	lstnr *listener
}

// NewModule creates the module and subscribes it to src.
func NewModule(src *EventSource) *Module {
	m := &Module{src: src}
	src.Enable(m.OnEventWritten)
	m.lstnr = &listener{counts: make(map[string]int)} // BUG: allocated after enabling the source
	return m
}

// OnEventWritten is the event callback.
func (m *Module) OnEventWritten(e Event) {
	m.lstnr.Handle(e)
}

// Count reports how many events of the given name were collected.
func (m *Module) Count(name string) int {
	m.lstnr.mu.Lock()
	defer m.lstnr.mu.Unlock()
	return m.lstnr.counts[name]
}

// Close unsubscribes and releases the listener.
func (m *Module) Close() {
	m.src.Disable()
	m.lstnr = nil
}
