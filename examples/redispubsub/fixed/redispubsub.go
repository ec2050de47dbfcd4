// Package redispubsub reproduces go-redis issue #198 ("ReceiveMessage panics
// when pubsub closed").
//
// One goroutine reads messages from a PubSub while another closes it. Receive
// checks the closed flag, then reads through ps.cn; Close marks the PubSub
// closed, closes the connection and sets ps.cn to nil. Normally the reader is
// already blocked inside the connection read when Close runs, and gets an EOF;
// if the reader is slow between its check and the read, it dereferences the
// nil connection.
//
// Kind: use-after-dispose (use ps.cn in Receive, dispose in Close).
//
// This is the fixed twin: Receive takes the connection under the lock that
// Close holds, and a closed PubSub returns an error instead of panicking.
package redispubsub

import (
	"errors"
	"io"
	"sync"
)

// ErrClosed is returned by Receive after Close.
var ErrClosed = errors.New("redis: client is closed")

// Message is a published message.
type Message struct {
	Channel string
	Payload string
}

type conn struct {
	in     chan Message
	closed chan struct{}
	once   sync.Once
}

func (cn *conn) readReply() (Message, error) {
	select {
	case m := <-cn.in:
		return m, nil
	case <-cn.closed:
		return Message{}, io.EOF
	}
}

func (cn *conn) Close() error {
	cn.once.Do(func() { close(cn.closed) })
	return nil
}

// PubSub is a subscription on a dedicated connection.
type PubSub struct {
	mu     sync.Mutex
	closed bool
	cn     *conn
}

// Subscribe subscribes to channels on a new connection fed by server.
func Subscribe(server chan Message) *PubSub {
	return &PubSub{cn: &conn{in: server, closed: make(chan struct{})}}
}

// Receive waits for the next message.
func (ps *PubSub) Receive() (Message, error) {
	ps.mu.Lock()
	cn := ps.cn
	closed := ps.closed
	ps.mu.Unlock()
	if closed || cn == nil {
		return Message{}, ErrClosed
	}
	return cn.readReply()
}

// Close closes the subscription and releases its connection.
func (ps *PubSub) Close() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return ErrClosed
	}
	ps.closed = true
	err := ps.cn.Close()
	ps.cn = nil
	return err
}
