// Package quicdouble is the fixed twin of ../: the check and the close
// run under one mutex (quic-go's fix makes closing idempotent the same way),
// so a second closer always sees the channel closed.
package quicdouble

import (
	"errors"
	"sync"
)

// Session is a QUIC session.
type Session struct {
	closeMu   sync.Mutex
	closeChan chan struct{}
	frames    chan string
	runDone   chan struct{}
	closeErr  error
}

// Dial starts a session whose run loop processes the given frames.
func Dial(frames ...string) *Session {
	s := &Session{
		closeChan: make(chan struct{}),
		frames:    make(chan string, len(frames)),
		runDone:   make(chan struct{}),
	}
	for _, f := range frames {
		s.frames <- f
	}
	go s.run()
	return s
}

func (s *Session) run() {
	defer close(s.runDone)
	for {
		select {
		case f := <-s.frames:
			if f == "CONNECTION_CLOSE" {
				s.closeRemote(errors.New("peer closed: NO_ERROR"))
			}
		case <-s.closeChan:
			return
		}
	}
}

// isClosed reports whether the session was closed.
func (s *Session) isClosed() bool {
	select {
	case <-s.closeChan:
		return true
	default:
		return false
	}
}

func (s *Session) closeRemote(err error) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.isClosed() {
		return
	}
	s.closeErr = err
	close(s.closeChan)
}

// CloseWithError closes the session from the application.
func (s *Session) CloseWithError(msg string) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.isClosed() {
		return errors.New("session already closed")
	}
	close(s.closeChan)
	return nil
}

// Wait waits for the run loop to exit.
func (s *Session) Wait() { <-s.runDone }
