// Package netmq is the thesis's Figure 4.2b interference scenario (WAFL thesis
// §4.4, a MEMORDER bug in NetMQ), in Go.
//
// When a connection is terminated abruptly, the terminating goroutine flushes
// a final packet through process() and then disposes the shared poller, while
// the connection's reader goroutine may still be inside process() for a
// packet it received. Normally the reader handled its packet long before the
// termination; if it is slow, it uses the nil poller. Because process() also
// runs on the terminating goroutine right before the dispose, a detector that
// delays every dynamic instance of that location delays both goroutines for the
// same time and never exposes the bug ("interfering dynamic instances").
//
// Kind: use-after-dispose (use c.poller in process, dispose in Terminate).
//
// This is the fixed twin: the poller is released only after the reader has
// stopped.
package netmq

import (
	"sync"
)

// Packet is a ZMTP frame.
type Packet struct {
	Kind string
	Body string
}

// Poller dispatches packets to sockets.
type Poller struct {
	mu      sync.Mutex
	handled map[string]int
}

// Handle dispatches one packet.
func (p *Poller) Handle(pkt Packet) {
	p.mu.Lock()
	p.handled[pkt.Kind]++
	p.mu.Unlock()
}

// Handled reports how many packets of a kind were dispatched.
func (p *Poller) Handled(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handled[kind]
}

// Conn is a connection with a reader goroutine.
type Conn struct {
	poller *Poller
	in     chan Packet
	done   chan struct{}
}

// Open starts the connection's reader.
func Open(p *Poller) *Conn {
	c := &Conn{poller: p, in: make(chan Packet, 16), done: make(chan struct{})}
	go c.readLoop()
	return c
}

func (c *Conn) process(pkt Packet) {
	c.poller.Handle(pkt)
}

func (c *Conn) readLoop() {
	defer close(c.done)
	for pkt := range c.in {
		c.process(pkt)
	}
}

// Deliver hands a packet received from the network to the reader.
func (c *Conn) Deliver(pkt Packet) { c.in <- pkt }

// Terminate handles an abrupt disconnect: flush the final packet, release the
// poller, stop the reader.
func (c *Conn) Terminate(final Packet) {
	c.process(final)
	close(c.in)
	<-c.done
	c.poller = nil
}
