package prec

import (
	"io"
	"sync"
)

// An interface call reaches only the package's types whose values flow to
// its receiver. Stream's goroutine closes s.rwc, which its user passes in;
// the package's own adapter (an io.Closer it hands out) never flows there,
// so the goroutine does not run Stream.Close through it.

type buffer struct{ n int }

type Stream struct {
	mu  sync.Mutex
	rwc io.Closer
	buf *buffer
	ch  chan struct{}
}

func NewStream(rwc io.Closer) *Stream {
	s := &Stream{rwc: rwc, buf: &buffer{}, ch: make(chan struct{})}
	go s.watch()
	return s
}

func (s *Stream) watch() {
	<-s.ch
	s.rwc.Close()
}

func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.n = 0
	return nil
}

// Release drops the buffer without the lock.
func (s *Stream) Release() {
	s.buf = nil
}

type adapter struct{ s *Stream }

func (a *adapter) Close() error { return a.s.Close() }

// Closer hands the stream out as an io.Closer.
func Closer(s *Stream) io.Closer { return &adapter{s} }

// Loop is a stream whose goroutine does close the package's own type: its
// close reads l.buf while ReleaseLoop may drop it.

type Loop struct {
	rwc io.Closer
	buf *buffer
	ch  chan struct{}
}

type loopCloser struct{ l *Loop }

func (lc *loopCloser) Close() error {
	lc.l.buf.n = 0
	return nil
}

func NewLoop() *Loop {
	l := &Loop{buf: &buffer{}, ch: make(chan struct{})}
	l.rwc = &loopCloser{l}
	go l.watch()
	return l
}

func (l *Loop) watch() {
	<-l.ch
	l.rwc.Close()
}

func (l *Loop) ReleaseLoop() {
	l.buf = nil // want `possible use-after-dispose: l.buf is set to nil in \(\*Loop\).ReleaseLoop while the goroutine started at invoke.go:\d+ may read it`
}
