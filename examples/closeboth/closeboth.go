// Package closeboth follows the channel shutdown of skycoin/skywire-testnet
// PR #369 (https://github.com/skycoin/skywire-testnet/pull/369, "Attempt to
// fix race in Channel/Link shutdown"): a messaging channel is closed from
// two sources — the transport owner calls Close, and the client's read loop
// handles the remote's ChannelClosed frame — and each source checks the
// channel's done chan with a non-blocking select and then closes it. When
// both pass the check before either closes, the second close panics:
// "close of closed channel". The PR closes the chan under a sync.Once.
//
// Which source comes first is the network's choice: the remote may close
// its end before or after the application does. Here the test draws it, and
// the two checks run 8 ms apart in either order; the two checks are two
// sites (Close and OnChannelClosed), so the preparation run sees one order
// and a detection run may see the other. `go test -race` is blind to it
// (channel operations synchronize).
//
// Kind: check-then-act (non-blocking select on doneChan, then
// close(doneChan)), both sides.
package closeboth

import (
	"errors"
	"sync"
)

// ErrChannelClosed is returned by Close on a closed channel.
var ErrChannelClosed = errors.New("closeboth: channel closed")

// Frame types of the link protocol.
const (
	FrameSend          = "Send"
	FrameCloseChannel  = "CloseChannel"
	FrameChannelClosed = "ChannelClosed"
)

// Frame is one frame read from the link.
type Frame struct {
	Type string
	Body []byte
}

// Link is the transport to the messaging server; it records the frames
// the client sends.
type Link struct {
	mu   sync.Mutex
	sent []string
}

func (l *Link) send(frame string) {
	l.mu.Lock()
	l.sent = append(l.sent, frame)
	l.mu.Unlock()
}

// Sent returns the frames sent so far.
func (l *Link) Sent() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sent...)
}

// Channel is one messaging channel over the link.
type Channel struct {
	link     *Link
	readChan chan []byte
	doneChan chan struct{}
}

// Close closes the channel from the local side and tells the remote.
func (ch *Channel) Close() error {
	select {
	case <-ch.doneChan:
		return ErrChannelClosed
	default:
	}
	close(ch.doneChan) // BUG: the check and the close are not atomic
	ch.link.send(FrameCloseChannel)
	return nil
}

// OnChannelClosed handles the remote's ChannelClosed frame; it reports
// whether this call closed the channel.
func (ch *Channel) OnChannelClosed() bool {
	select {
	case <-ch.doneChan:
		return false
	default:
	}
	close(ch.doneChan) // BUG: the check and the close are not atomic
	return true
}

// Client reads frames from its link and dispatches them to its channel.
type Client struct {
	link   *Link
	ch     *Channel
	frames chan Frame
	quit   chan struct{}
	done   chan struct{}
}

// Dial connects a client with one open channel and starts its read loop.
func Dial() *Client {
	l := &Link{}
	c := &Client{
		link:   l,
		ch:     &Channel{link: l, readChan: make(chan []byte, 16), doneChan: make(chan struct{})},
		frames: make(chan Frame, 16),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go c.readLoop()
	return c
}

// Channel returns the client's channel.
func (c *Client) Channel() *Channel { return c.ch }

// Deliver hands a frame from the server to the read loop.
func (c *Client) Deliver(f Frame) { c.frames <- f }

// Shutdown stops the read loop and waits for it.
func (c *Client) Shutdown() {
	close(c.quit)
	<-c.done
}

func (c *Client) readLoop() {
	defer close(c.done)
	for {
		select {
		case f := <-c.frames:
			switch f.Type {
			case FrameChannelClosed:
				c.ch.OnChannelClosed()
			case FrameSend:
				c.ch.readChan <- f.Body
			}
		case <-c.quit:
			return
		}
	}
}
