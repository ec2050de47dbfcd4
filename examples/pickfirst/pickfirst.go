// Package pickfirst reproduces grpc-go issue #4965 (fixed by PR #4971,
// "pickfirst: check b.sc before calling Connect").
//
// The ClientConn starts its balancer watcher goroutine before the pick_first
// balancer has received its first address list. When the channel leaves idle
// (here: an idle timer fires in the watcher), ExitIdle calls b.sc.Connect(),
// but b.sc is only created by UpdateClientConnState on the dialing goroutine.
// Normally the subchannel exists long before the timer fires; if the dialing
// goroutine is slow, ExitIdle dereferences a nil *SubConn.
//
// Kind: use-before-init (init b.sc in Dial, use in the watcher goroutine).
package pickfirst

import (
	"errors"
	"strings"
	"sync"
	"time"
)

// SubConn is a connection to one backend address.
type SubConn struct {
	addr string

	mu         sync.Mutex
	connecting int
}

// Connect starts (or restarts) connecting the subchannel.
func (sc *SubConn) Connect() {
	sc.mu.Lock()
	sc.connecting++
	sc.mu.Unlock()
}

// Attempts reports how many times Connect was called.
func (sc *SubConn) Attempts() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.connecting
}

// Addr is the backend address of the subchannel.
func (sc *SubConn) Addr() string { return sc.addr }

// Balancer is the pick_first load-balancing policy: one subchannel to the
// first resolved address.
type Balancer struct {
	sc *SubConn
}

// UpdateClientConnState gives the balancer the resolved addresses.
func (b *Balancer) UpdateClientConnState(addrs []string) error {
	if len(addrs) == 0 {
		return errors.New("pickfirst: produced zero addresses")
	}
	b.sc = &SubConn{addr: addrs[0]}
	b.sc.Connect()
	return nil
}

// ExitIdle asks the balancer to reconnect after the channel was idle.
func (b *Balancer) ExitIdle() {
	b.sc.Connect() // BUG: b.sc may not exist yet
}

// ClientConn is a client channel with a balancer watcher goroutine.
type ClientConn struct {
	balancer *Balancer
	closing  chan struct{}
	done     chan struct{}
}

// Dial creates the channel. The watcher calls ExitIdle once after
// idleTimeout.
func Dial(target string, idleTimeout time.Duration) (*ClientConn, error) {
	cc := &ClientConn{balancer: &Balancer{}, closing: make(chan struct{}), done: make(chan struct{})}
	go cc.watcher(idleTimeout)
	addrs := resolve(target)
	if err := cc.balancer.UpdateClientConnState(addrs); err != nil {
		close(cc.closing)
		<-cc.done
		return nil, err
	}
	return cc, nil
}

func (cc *ClientConn) watcher(idleTimeout time.Duration) {
	defer close(cc.done)
	t := time.NewTimer(idleTimeout)
	defer t.Stop()
	select {
	case <-t.C:
		cc.balancer.ExitIdle()
	case <-cc.closing:
	}
}

// Wait blocks until the watcher goroutine has finished.
func (cc *ClientConn) Wait() { <-cc.done }

// SubConn returns the balancer's subchannel (call after Wait).
func (cc *ClientConn) SubConn() *SubConn { return cc.balancer.sc }

// resolve is a passthrough resolver: "passthrough:///a,b" -> [a b].
func resolve(target string) []string {
	target = strings.TrimPrefix(target, "passthrough:///")
	if target == "" {
		return nil
	}
	return strings.Split(target, ",")
}
