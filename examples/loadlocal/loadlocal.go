// Package loadlocal reproduces the pattern of daangn/minimemcached PR #13
// ("Fix data race / nil-pointer panic between serve goroutine and Close").
//
// Run stores the listener in a field and starts the serve goroutine, which
// reads the field into a local and accepts on it; Close closes the listener
// and clears the field. A server closed right after Run can have Close
// clear the field before the serve goroutine has read it: the goroutine
// then calls Accept on a nil listener. The read of the field and the
// dereference are two statements apart, so no access to the field itself
// panics: only counting the load as a use makes it a candidate.
//
// Kind: use-after-dispose (load of s.l in serve, dispose in Close).
package loadlocal

import (
	"errors"
	"sync"
)

// ErrClosed is returned by Accept on a closed listener.
var ErrClosed = errors.New("loadlocal: listener closed")

// Listener hands out connections (here: request strings).
type Listener struct {
	mu     sync.Mutex
	closed bool
	conns  chan string
}

func newListener() *Listener { return &Listener{conns: make(chan string, 16)} }

// Accept waits for the next connection.
func (l *Listener) Accept() (string, error) {
	c, ok := <-l.conns
	if !ok {
		return "", ErrClosed
	}
	return c, nil
}

// Dial queues a connection.
func (l *Listener) Dial(c string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.conns <- c
	}
}

// Close stops accepting.
func (l *Listener) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.conns)
	}
}

// Server serves connections from its listener.
type Server struct {
	mu     sync.Mutex
	l      *Listener
	served []string
	done   chan struct{}
}

// Run starts the server.
func Run() *Server {
	s := &Server{l: newListener(), done: make(chan struct{})}
	go s.serve()
	return s
}

func (s *Server) serve() {
	defer close(s.done)
	l := s.l // BUG: Close may have cleared the field already
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.served = append(s.served, c)
		s.mu.Unlock()
	}
}

// Listener returns the server's listener (nil after Close).
func (s *Server) Listener() *Listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.l
}

// Close closes the listener and waits for the serve goroutine.
func (s *Server) Close() {
	s.mu.Lock()
	if s.l != nil {
		s.l.Close()
		s.l = nil
	}
	s.mu.Unlock()
	<-s.done
}

// Served returns the connections served so far.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.served)
}
