// Package ddpipe reproduces DataDog/datadog-go PR #397 ("Fix nil pointer
// dereference in Windows pipe writer Close").
//
// The pipe writer defers dialing the named pipe to the first Write, which runs
// on the client's sender goroutine and sets p.conn under p.mu. Close calls
// p.conn.Close() without the lock and without a nil check. Normally the first
// metric has been flushed (and the pipe dialed) long before the application
// closes the client; if the sender is slow, Close calls a method through the
// nil interface.
//
// Kind: use-before-init (init p.conn in Write, use in Close).
//
// This is the fixed twin: Close reads p.conn under p.mu and returns early when
// the pipe was never dialed, as in the PR.
package ddpipe

import (
	"bytes"
	"io"
	"strconv"
	"sync"
)

// Dialer opens the named pipe.
type Dialer func(path string) (io.WriteCloser, error)

type pipeWriter struct {
	path string
	dial Dialer

	mu   sync.RWMutex
	conn io.WriteCloser
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.mu.RLock()
	conn := p.conn
	p.mu.RUnlock()
	if conn == nil {
		c, err := p.dial(p.path)
		if err != nil {
			return 0, err
		}
		p.mu.Lock()
		p.conn = c
		p.mu.Unlock()
		conn = c
	}
	n, err := conn.Write(b)
	if err != nil {
		p.mu.Lock()
		p.conn = nil // reconnect on the next write
		p.mu.Unlock()
	}
	return n, err
}

func (p *pipeWriter) Close() error {
	p.mu.RLock()
	conn := p.conn
	p.mu.RUnlock()
	if conn == nil {
		return nil
	}
	return conn.Close()
}

// Client is a statsd client that sends from its own goroutine.
type Client struct {
	w       *pipeWriter
	metrics chan string
	stop    chan struct{}
	done    chan struct{}
}

// New returns a client writing to the named pipe at path.
func New(path string, dial Dialer) *Client {
	c := &Client{
		w:       &pipeWriter{path: path, dial: dial},
		metrics: make(chan string, 64),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go c.sender()
	return c
}

func (c *Client) sender() {
	defer close(c.done)
	for {
		select {
		case m := <-c.metrics:
			c.w.Write([]byte(m + "\n"))
		case <-c.stop:
			return
		}
	}
}

// Count queues a counter metric.
func (c *Client) Count(name string, v int) {
	c.metrics <- name + ":" + strconv.Itoa(v) + "|c"
}

// Close stops the sender and closes the pipe.
func (c *Client) Close() error {
	close(c.stop)
	err := c.w.Close()
	<-c.done
	return err
}

// MemPipe is an in-memory named pipe server for tests.
type MemPipe struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
}

// Dial connects to the pipe.
func (m *MemPipe) Dial(string) (io.WriteCloser, error) { return m, nil }

// Write appends to the pipe.
func (m *MemPipe) Write(b []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, io.ErrClosedPipe
	}
	return m.buf.Write(b)
}

// Close closes the pipe.
func (m *MemPipe) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// String returns what was written.
func (m *MemPipe) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buf.String()
}
