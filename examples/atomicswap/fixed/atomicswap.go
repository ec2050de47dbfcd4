// Package atomicswap reproduces the pattern of livekit/server-sdk-go
// PR #351 ("Close previous conn when switching to new conn"), where the
// signal client keeps its websocket in an atomic (an atomic.Value, then an
// atomic.Pointer) and the read worker retires it when the connection ends,
// while other goroutines load it to send.
//
// Here the read worker retires the connection with conn.Swap(nil) when the
// server hangs up, and SendLeave loads the connection and writes to it. A
// SendLeave that loads after the read worker retired the connection writes
// to a nil connection. Swap is the dispose; the Load into a local and the
// Write two lines further are the use.
//
// This is the fixed twin: SendLeave checks the connection it loaded, as the
// fixed client does before using the one it loaded.
//
// Kind: use-after-dispose (atomic load in SendLeave, Swap(nil) in the read
// worker).
package atomicswap

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is a websocket connection.
type Conn struct {
	mu     sync.Mutex
	sent   []string
	closed bool
	hangup <-chan time.Time
}

// Write sends a message.
func (c *Conn) Write(msg string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("atomicswap: write on closed connection")
	}
	c.sent = append(c.sent, msg)
	return nil
}

// Close closes the connection.
func (c *Conn) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// SignalClient talks to the signalling server over one connection.
type SignalClient struct {
	conn atomic.Pointer[Conn]
	done chan struct{}
}

// Start connects; the server hangs up after hangup.
func Start(hangup time.Duration) *SignalClient {
	c := &SignalClient{done: make(chan struct{})}
	c.conn.Store(&Conn{hangup: time.After(hangup)})
	go c.readWorker(c.conn.Load().hangup)
	return c
}

func (c *SignalClient) readWorker(hangup <-chan time.Time) {
	defer close(c.done)
	<-hangup
	if old := c.conn.Swap(nil); old != nil {
		old.Close()
	}
}

// SendLeave tells the server the participant leaves.
func (c *SignalClient) SendLeave() error {
	conn := c.conn.Load()
	if conn == nil {
		return nil // the connection is gone: nothing to leave
	}
	return conn.Write("leave")
}

// Wait waits for the read worker.
func (c *SignalClient) Wait() { <-c.done }
