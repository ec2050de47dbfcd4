// Package newtping is the fixed twin of ../: the monitor loads the
// connection once, checks it and writes on what it checked.
package newtping

import (
	"math/rand"
	"sync/atomic"
	"time"
)

// Conn is a websocket connection.
type Conn struct {
	pings atomic.Int64
	id    string
}

// WriteControl writes a control frame.
func (c *Conn) WriteControl(kind string) {
	if c.id != "" && kind == "ping" {
		c.pings.Add(1)
	}
}

// Client is a websocket client with a ping monitor.
type Client struct {
	conn atomic.Pointer[Conn]
	done chan struct{}
}

// Connect connects and starts the ping monitor, whose first ping comes
// after interval, plus up to jitter when late.
func Connect(interval, late time.Duration) *Client {
	c := &Client{done: make(chan struct{})}
	c.conn.Store(&Conn{id: "ws-1"})
	wait := interval
	if rand.Intn(5) == 0 { // one start in five is late (the jittered backoff)
		wait += late
	}
	go c.pingMonitor(wait)
	return c
}

func (c *Client) pingMonitor(wait time.Duration) {
	defer close(c.done)
	time.Sleep(wait)
	conn := c.conn.Load()
	if conn == nil {
		return
	}
	conn.WriteControl("ping")
}

// Close closes the connection.
func (c *Client) Close() {
	c.conn.Store(nil)
}

// Done is closed when the monitor has finished.
func (c *Client) Done() <-chan struct{} { return c.done }
