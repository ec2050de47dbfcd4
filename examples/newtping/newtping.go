// Package newtping follows fosrl/newt issue #176
// (https://github.com/fosrl/newt/issues/176, "Panic in WebSocket client: nil
// *websocket.Conn due to setting c.conn to nil"): the client's ping monitor
// goroutine checks that c.conn is not nil and then writes a ping on c.conn,
// while reconnect/shutdown sets c.conn to nil. The monitor's first ping
// comes after a jittered interval, so in some runs it fires only after the
// test closed the client (it sees nil and returns, or the test has already
// ended): a preparation run in which the monitor was late records no pair
// at all. In the others the ping comes milliseconds before Close; a monitor
// delayed between its check and its write dereferences nil. The connection
// is an atomic.Pointer: `go test -race` stays silent.
//
// Kind: use-after-dispose (nil pointer); the racing goroutine is late in
// some delay-free runs (docs/algorithm.md, "Plans that keep learning").
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
	if c.conn.Load() == nil {
		return
	}
	c.conn.Load().WriteControl("ping") // BUG: c.conn may be nil since the check
}

// Close closes the connection.
func (c *Client) Close() {
	c.conn.Store(nil)
}

// Done is closed when the monitor has finished.
func (c *Client) Done() <-chan struct{} { return c.done }
