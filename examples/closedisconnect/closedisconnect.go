// Package closedisconnect follows the client shutdown of centrifugal/centrifuge-go
// PR #112 (https://github.com/centrifugal/centrifuge-go/pull/112, "fix: nil
// pointer dereference on concurrent Close and disconnect", in v0.10.9): a
// client's Close and the handling of a transport disconnect both run the
// client's state machine. Each transition checks the state under the
// client's lock and returns early when another goroutine got there first.
// The disconnect moves every subscription to "subscribing" and, when that
// changes a subscription's state, pushes its event to the callback queue;
// Close moves the subscriptions to "unsubscribed", waits for the reader and
// then stops the queue and sets c.cbQueue = nil. The push reads c.cbQueue
// without the lock: when the disconnect wins the client's transition, Close
// unsubscribes the subscription before the disconnect's subscribing
// transition, and the queue is gone by the push, the push dereferences nil.
// The fix reads the queue under the lock and returns when it is nil.
//
// Which goroutine passes which state check first decides the path; in a
// passing run the loser of the client's transition returns early and never
// reaches the push, so the trace has no use of c.cbQueue near its dispose.
// `go test -race` sees it only in a schedule that reaches the push while
// Close is still running, which is about as rare as the crash (one report
// in about 1,400 runs of the test here).
//
// Kind: use-after-dispose (nil pointer) behind two state transitions (state
// fields checked and set under locks).
package closedisconnect

import "sync"

// State is a client's state.
type State int

// Client states.
const (
	StateConnected State = iota
	StateDisconnected
	StateClosed
)

// SubState is a subscription's state.
type SubState int

// Subscription states.
const (
	SubSubscribing SubState = iota
	SubSubscribed
	SubUnsubscribed
)

// cbQueue runs event handlers in order on a goroutine of its own.
type cbQueue struct {
	mu     sync.Mutex
	fns    []func()
	wake   chan struct{}
	closed bool
	done   chan struct{}
}

func newQueue() *cbQueue {
	q := &cbQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.dispatch()
	return q
}

func (q *cbQueue) push(fn func()) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.fns = append(q.fns, fn)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *cbQueue) dispatch() {
	defer close(q.done)
	for {
		q.mu.Lock()
		fns, closed := q.fns, q.closed
		q.fns = nil
		q.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
		if closed {
			return
		}
		<-q.wake
	}
}

func (q *cbQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
}

// transport is the client's connection; its reader goroutine ends when it
// is closed.
type transport struct {
	closeOnce sync.Once
	closed    chan struct{}
}

func (t *transport) close() { t.closeOnce.Do(func() { close(t.closed) }) }

// Client is a connection to the server with its subscriptions.
type Client struct {
	mu         sync.RWMutex
	state      State
	transport  *transport
	subs       []*Subscription
	cbQueue    *cbQueue
	readerDone chan struct{}

	evMu   sync.Mutex
	events []string
}

// Connect returns a connected client and starts its reader.
func Connect() *Client {
	t := &transport{closed: make(chan struct{})}
	c := &Client{state: StateConnected, transport: t, cbQueue: newQueue(), readerDone: make(chan struct{})}
	go c.reader(t)
	return c
}

func (c *Client) reader(t *transport) {
	defer close(c.readerDone)
	<-t.closed
}

// NewSubscription adds a subscription in state "subscribing".
func (c *Client) NewSubscription(channel string) *Subscription {
	s := &Subscription{client: c, channel: channel, state: SubSubscribing}
	c.mu.Lock()
	c.subs = append(c.subs, s)
	c.mu.Unlock()
	return s
}

// Close disconnects the client, unsubscribes its subscriptions and stops
// its callback queue. The client is unusable after it.
func (c *Client) Close() {
	c.moveToDisconnected()
	c.moveToClosed()
}

// HandleDisconnect is what the transport layer calls when the connection
// is lost.
func (c *Client) HandleDisconnect() {
	c.moveToDisconnected()
}

func (c *Client) moveToDisconnected() {
	c.mu.Lock()
	if c.state == StateDisconnected || c.state == StateClosed {
		c.mu.Unlock()
		return
	}
	c.state = StateDisconnected
	c.transport.close()
	c.transport = nil
	subs := append([]*Subscription(nil), c.subs...)
	c.mu.Unlock()
	for _, s := range subs {
		s.moveToSubscribing()
	}
}

func (c *Client) moveToClosed() {
	c.mu.Lock()
	if c.state == StateClosed {
		c.mu.Unlock()
		return
	}
	c.state = StateClosed
	subs := append([]*Subscription(nil), c.subs...)
	c.mu.Unlock()
	for _, s := range subs {
		s.moveToUnsubscribed()
	}
	// The reader must be done before the queue stops.
	<-c.readerDone
	c.mu.Lock()
	c.cbQueue.close()
	c.cbQueue = nil
	c.mu.Unlock()
}

func (c *Client) runHandlerAsync(fn func()) {
	c.cbQueue.push(fn) // BUG: reads c.cbQueue without the lock, after Close may have set it to nil
}

func (c *Client) event(e string) {
	c.evMu.Lock()
	c.events = append(c.events, e)
	c.evMu.Unlock()
}

// Events returns the events the handlers saw.
func (c *Client) Events() []string {
	c.evMu.Lock()
	defer c.evMu.Unlock()
	return append([]string(nil), c.events...)
}

// Subscription is a client's subscription to a channel.
type Subscription struct {
	client  *Client
	channel string
	mu      sync.Mutex
	state   SubState
}

func (s *Subscription) moveToSubscribing() {
	s.mu.Lock()
	needEvent := s.state != SubSubscribing
	s.state = SubSubscribing
	s.mu.Unlock()
	if needEvent {
		s.client.runHandlerAsync(func() { s.client.event("subscribing " + s.channel) })
	}
}

func (s *Subscription) moveToUnsubscribed() {
	s.mu.Lock()
	needEvent := s.state != SubUnsubscribed
	s.state = SubUnsubscribed
	s.mu.Unlock()
	if needEvent {
		s.client.runHandlerAsync(func() { s.client.event("unsubscribed " + s.channel) })
	}
}
