// Package closeboth is the fixed twin of ../, fixed the way
// skycoin/skywire-testnet PR #369 did: both sources still check the done
// chan, but the close itself runs under a sync.Once, so only one of them
// closes it.
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
	doneOnce sync.Once
}

// close closes doneChan once; it reports whether this call closed it.
func (ch *Channel) close() bool {
	closed := false
	ch.doneOnce.Do(func() {
		close(ch.doneChan)
		closed = true
	})
	return closed
}

// Close closes the channel from the local side and tells the remote.
func (ch *Channel) Close() error {
	select {
	case <-ch.doneChan:
		return ErrChannelClosed
	default:
	}
	if ch.close() {
		ch.link.send(FrameCloseChannel)
	}
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
	return ch.close()
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
