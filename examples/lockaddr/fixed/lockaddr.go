// Package lockaddr is the fixed twin of ../: Start opens the listener and
// stores it (under the lock, as before) before it starts the serving
// goroutine, so Addr always finds it.
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

// Server serves connections on a listener Start opens.
type Server struct {
	mu    sync.RWMutex
	ln    *Listener
	port  int
	conns int
	done  chan struct{}
}

// NewServer returns a server for port.
func NewServer(port int) *Server { return &Server{port: port, done: make(chan struct{})} }

// Start opens the listener, then serves in the background.
func (s *Server) Start() {
	ln := listen(s.port)
	s.mu.Lock()
	s.setListener(ln)
	s.mu.Unlock()
	go s.serve()
}

func (s *Server) serve() {
	defer close(s.done)
}

// setListener records the listener; s.mu must be held.
func (s *Server) setListener(ln *Listener) {
	s.ln = ln
	s.conns = 0
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ln.Addr()
}

// Wait waits for the serving goroutine to finish.
func (s *Server) Wait() { <-s.done }
