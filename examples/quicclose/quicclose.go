// Package quicclose follows quic-go issue #1499 ("calling Listener.Close twice
// panics: close of closed channel") and the closeOnce that quic-go's
// connection uses; here the two closers run concurrently on different
// goroutines.
//
// A connection can be closed by its run loop (the peer sent CONNECTION_CLOSE)
// and by the application (CloseWithError). closeLocal is a non-atomic "close
// once": it loads the atomic closeErr, and if nil stores the error and closes
// closeChan. Normally the run loop closes the connection long before the
// application's call, which then just reports the stored error; if the run loop
// is slow between its check and its store, both callers close closeChan. The
// lifecycle state is an atomic.Pointer, so `go test -race` stays silent.
//
// Kind: use-before-init (init closeErr in the run loop, use in
// CloseWithError; the failure is a double close).
package quicclose

import (
	"errors"
	"fmt"
	"sync/atomic"
)

type closeError struct {
	err    error
	remote bool
}

// Conn is a QUIC connection.
type Conn struct {
	closeErr  atomic.Pointer[closeError]
	closeChan chan struct{}
	incoming  chan string
	runDone   chan struct{}
}

// Dial returns a connection whose run loop processes the given frames.
func Dial(frames ...string) *Conn {
	c := &Conn{
		closeChan: make(chan struct{}),
		incoming:  make(chan string, len(frames)),
		runDone:   make(chan struct{}),
	}
	for _, f := range frames {
		c.incoming <- f
	}
	go c.run()
	return c
}

func (c *Conn) run() {
	defer close(c.runDone)
	for {
		select {
		case f := <-c.incoming:
			if f == "CONNECTION_CLOSE" {
				c.closeLocal(errors.New("peer closed: NO_ERROR"), true)
			}
		case <-c.closeChan:
			return
		}
	}
}

// closeLocal closes the connection once; later calls report the first error.
func (c *Conn) closeLocal(err error, remote bool) error {
	if c.closeErr.Load() != nil {
		return fmt.Errorf("connection already closed: %w", c.closeErr.Load().err)
	}
	c.closeErr.Store(&closeError{err: err, remote: remote}) // BUG: check and store are not atomic
	close(c.closeChan)
	return nil
}

// CloseWithError closes the connection from the application.
func (c *Conn) CloseWithError(msg string) error {
	return c.closeLocal(errors.New(msg), false)
}

// Wait waits for the run loop to exit.
func (c *Conn) Wait() { <-c.runDone }

// ClosedByPeer reports whether the peer closed the connection first.
func (c *Conn) ClosedByPeer() bool {
	ce := c.closeErr.Load()
	return ce != nil && ce.remote
}
