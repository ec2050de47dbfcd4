// Package lockaddr reproduces the ordering bug left by moov-io/iso8583-
// connection PR #3 ("server: lock around Start() setting listener /
// address"): the PR put the listener field under the server's mutex, which
// silenced the race detector, but Addr still dereferences the listener
// whenever it runs before the serving goroutine has set it.
//
// Start launches the serving goroutine, which opens the listener and stores
// it with s.mu held (through a helper that expects the lock held); Addr takes
// s.mu.RLock with a deferred RUnlock and asks the listener for its address.
// Every access is under the lock, so `go test -race` reports nothing; in a
// plain run the listener is set long before the test asks for the address.
// A delay at the init taken after s.mu.Lock() only makes Addr wait on the
// lock: the delay has to go before the Lock call (hoisting).
//
// Kind: use-before-init (init s.ln in serve, under Lock via setListener;
// use in Addr, under RLock).
package lockaddr

import (
	"fmt"
	"sync"
)

// Listener is an open listening socket.
type Listener struct{ port int }

// Addr is the listener's address.
func (l *Listener) Addr() string { return fmt.Sprintf("127.0.0.1:%d", l.port) }

func listen(port int) *Listener { return &Listener{port: port} }

// Server serves connections on a listener the serving goroutine opens.
type Server struct {
	mu    sync.RWMutex
	ln    *Listener
	port  int
	conns int
	done  chan struct{}
}

// NewServer returns a server for port.
func NewServer(port int) *Server { return &Server{port: port, done: make(chan struct{})} }

// Start starts serving in the background.
func (s *Server) Start() {
	go s.serve()
}

func (s *Server) serve() {
	defer close(s.done)
	ln := listen(s.port)
	s.mu.Lock()
	s.setListener(ln)
	s.mu.Unlock()
}

// setListener records the listener; s.mu must be held.
func (s *Server) setListener(ln *Listener) {
	s.ln = ln // init, inside the caller's critical section
	s.conns = 0
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ln.Addr() // BUG: s.ln is nil until serve has run
}

// Wait waits for the serving goroutine to finish its setup.
func (s *Server) Wait() { <-s.done }
