// Package lateserve follows daangn/minimemcached PR #13
// (https://github.com/daangn/minimemcached/pull/13, "Fix data race /
// nil-pointer panic between serve goroutine and Close"), as its regression
// test TestRunClose shows it with one Run and an immediate Close: Run
// starts the accept loop with go s.serve(), whose loop calls s.l.Accept()
// on the server's listener field, and Close closes the listener and sets
// the field to nil without waiting for the goroutine. A serve goroutine
// that reads the field after Close calls Accept on a nil interface.
//
// In the upstream test the order is the scheduler's: the goroutine often
// has not run when Close returns and the test ends. Here its start-up is
// explicit: it logs that it serves (an access of the server's logger) and
// waits 20 ms before its first Accept, so that in a delay-free run the test
// has returned and the process exited long before it reads the listener:
// the preparation trace holds the goroutine's start and its log access and
// no access to s.l — the goroutine stopped short, or never ran when the
// scheduler had not started it yet — so the trace has no candidate pair.
// The pair comes from the sites the go statement may reach (docs/algorithm.md,
// "Beyond the observed schedule").
//
// Kind: use-after-dispose (nil interface method call, late goroutine).
package lateserve

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrClosed is returned by Accept on a closed listener.
var ErrClosed = errors.New("lateserve: listener closed")

// Listener is the server's network listener (net.Listener's shape).
type Listener interface {
	Accept() (string, error)
	Close() error
}

// pipeListener hands out connections queued by Dial.
type pipeListener struct {
	once  sync.Once
	conns chan string
}

func newPipeListener() *pipeListener { return &pipeListener{conns: make(chan string, 16)} }

func (p *pipeListener) Accept() (string, error) {
	c, ok := <-p.conns
	if !ok {
		return "", ErrClosed
	}
	return c, nil
}

func (p *pipeListener) Close() error {
	p.once.Do(func() { close(p.conns) })
	return nil
}

// Logger writes the server's log lines.
type Logger struct {
	mu    sync.Mutex
	lines []string
}

// Printf logs a line.
func (l *Logger) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// startup is how long the serve goroutine takes before its first Accept.
const startup = 20 * time.Millisecond

// Server accepts connections on its listener.
type Server struct {
	mu     sync.Mutex
	l      Listener
	log    *Logger
	served int
}

// Run starts a server.
func Run() *Server {
	s := &Server{l: newPipeListener(), log: &Logger{}}
	go s.serve()
	return s
}

func (s *Server) serve() {
	s.log.Printf("serving")
	time.Sleep(startup)
	for {
		_, err := s.l.Accept() // BUG: Close may have set s.l to nil
		if err != nil {
			return
		}
		s.mu.Lock()
		s.served++
		s.mu.Unlock()
	}
}

// Close closes the listener; the serve goroutine's Accept then fails.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.l != nil {
		s.l.Close()
		s.l = nil
	}
}
