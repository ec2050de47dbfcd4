// Package quicdouble follows the double close of quic-go issue #2143
// (https://github.com/quic-go/quic-go/issues/2143; the same shape as #4637):
// a session is closed once by its run loop (the peer closed the
// connection) and once by the application, and each closer runs
// `if !s.isClosed() { close(s.closeChan) }`, where isClosed is a select on
// closeChan with a default. In every delay-free run the application's call
// comes milliseconds after the run loop's close, sees the channel closed and
// returns: its close never executes. If the run loop is preempted between
// its check and its close, both close: "close of closed channel". `go test
// -race` is blind to it (channel operations synchronize).
//
// Kind: check-then-act (check in isClosed, act: close(s.closeChan)).
package quicdouble

import "errors"

// Session is a QUIC session.
type Session struct {
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
	if s.isClosed() {
		return
	}
	s.closeErr = err
	close(s.closeChan) // BUG: check and close are not atomic
}

// CloseWithError closes the session from the application.
func (s *Session) CloseWithError(msg string) error {
	if s.isClosed() {
		return errors.New("session already closed")
	}
	close(s.closeChan) // BUG: check and close are not atomic
	return nil
}

// Wait waits for the run loop to exit.
func (s *Session) Wait() { <-s.runDone }
