// Package ubi holds use-before-init cases: a slot a goroutine may read
// before the code that started it sets it.
package ubi

import (
	"sync"
	"time"
)

type handler struct{ n int }

func (h *handler) handle() { h.n++ }

// Positive: the goroutine starts before the field it uses is set.
type late struct{ h *handler }

func startLate() *late {
	s := &late{}
	go s.loop()
	s.h = &handler{} // want `possible use-before-init: s.h is set in startLate only after the goroutine started at ubi.go:\d+, which may read it at ubi.go:\d+`
	return s
}

func (s *late) loop() { s.h.handle() }

// Negative: set before the go statement.
type early struct{ h *handler }

func startEarly() *early {
	s := &early{}
	s.h = &handler{}
	go s.loop()
	return s
}

func (s *early) loop() { s.h.handle() }

// Negative: the goroutine checks the value it loaded for nil.
type checked struct{ h *handler }

func startChecked() *checked {
	s := &checked{}
	go s.loop()
	s.h = &handler{}
	return s
}

func (s *checked) loop() {
	if h := s.h; h != nil {
		h.handle()
	}
}

// Negative: the goroutine waits for a channel closed after the init.
type ready struct {
	h     *handler
	ready chan struct{}
}

func startReady() *ready {
	s := &ready{ready: make(chan struct{})}
	go s.loop()
	s.h = &handler{}
	close(s.ready)
	return s
}

func (s *ready) loop() {
	<-s.ready
	s.h.handle()
}

// Positive: a method value handed to a running goroutine that calls the
// handlers it reads from a field, before the field the method uses is set.
type source struct {
	mu       sync.Mutex
	handlers []func(int)
}

func (src *source) run() {
	for {
		src.mu.Lock()
		hs := append([]func(int){}, src.handlers...)
		src.mu.Unlock()
		for _, h := range hs {
			h(1)
		}
		time.Sleep(time.Millisecond)
	}
}

func (src *source) Start() { go src.run() }

func (src *source) AddHandler(h func(int)) {
	src.mu.Lock()
	src.handlers = append(src.handlers, h)
	src.mu.Unlock()
}

type consumer struct{ h *handler }

func (c *consumer) onEvent(int) { c.h.handle() }

func newConsumer(src *source) *consumer {
	c := &consumer{}
	src.AddHandler(c.onEvent)
	c.h = &handler{} // want `possible use-before-init: c.h is set in newConsumer only after \(\*consumer\).onEvent was handed at ubi.go:\d+ to a goroutine that calls it`
	return c
}

// Positive: only the goroutine sets the field, Addr reads it unguarded.
type server struct {
	mu sync.Mutex
	ln *handler
}

func (s *server) Start() { go s.serve() }

func (s *server) serve() {
	s.mu.Lock()
	s.ln = &handler{} // want `possible use-before-init: s.ln is set only by the goroutine started at ubi.go:\d+ \(in \(\*server\).serve\), while \(\*server\).Addr may read it at ubi.go:\d+ before it is set`
	s.mu.Unlock()
}

func (s *server) Addr() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ln.n
}

// Negative: Start returns only after the goroutine set the field.
type waited struct {
	ln   *handler
	done chan struct{}
}

func (s *waited) Start() {
	s.done = make(chan struct{})
	go s.serve()
	<-s.done
}

func (s *waited) serve() {
	s.ln = &handler{}
	close(s.done)
}

func (s *waited) Addr() int { return s.ln.n }

// Positive: the result is stored after the channel the reader waits for
// is closed; negative twin: stored before.
type result struct{ out *handler }

func Compute() int {
	r := result{}
	done := make(chan struct{})
	go func() {
		close(done)
		r.out = &handler{n: 1} // want `possible use-before-init: r.out is set only by the goroutine started at ubi.go:\d+`
	}()
	<-done
	return r.out.n
}

type result2 struct{ out *handler }

func Compute2() int {
	r := result2{}
	done := make(chan struct{})
	go func() {
		r.out = &handler{n: 1}
		close(done)
	}()
	<-done
	return r.out.n
}
