// Package netstack reproduces the wireguard-go netstack TUN shutdown race
// (mullvad/wireguard-go PR #23, "Synchronize shutdown of netstack write
// channel"; WireGuard/wireguard-go PR #85; tailscale PR #20542).
//
// The network stack's goroutine hands outgoing packets to the device with
// WriteNotify, which checks an atomic "closed" flag and then sends on
// incomingPacket. Close sets the flag, drains pending packets and closes the
// channel. The check-then-send is not atomic: a packet produced when the link
// comes up is normally queued long before Close; if the stack goroutine is slow
// between the check and the send, it sends on the closed channel. In normal
// runs Close's drain receives the packet, which orders send before close, so
// `go test -race` stays silent.
//
// Kind: use-after-dispose (send on incomingPacket, close in Close).
package netstack

import (
	"sync/atomic"
)

// Packet is an IP packet.
type Packet []byte

// NetTun is a userspace TUN device backed by a network stack.
type NetTun struct {
	incomingPacket chan Packet
	closed         atomic.Bool
	dropped        atomic.Int64
}

// New returns an open device.
func New() *NetTun {
	return &NetTun{incomingPacket: make(chan Packet, 8)}
}

// WriteNotify is called by the network stack when a packet is ready to be
// read from the device.
func (t *NetTun) WriteNotify(p Packet) {
	if t.closed.Load() {
		t.dropped.Add(1)
		return
	}
	t.incomingPacket <- p // BUG: Close may run between the check and the send
}

// Read returns the next outgoing packet; ok is false once the device is
// closed.
func (t *NetTun) Read() (p Packet, ok bool) {
	p, ok = <-t.incomingPacket
	return p, ok
}

// Close closes the device, discarding packets nobody read.
func (t *NetTun) Close() int {
	t.closed.Store(true)
	discarded := 0
drain:
	for {
		select {
		case <-t.incomingPacket:
			discarded++
		default:
			break drain
		}
	}
	close(t.incomingPacket)
	return discarded
}

// Dropped reports packets written after Close.
func (t *NetTun) Dropped() int64 { return t.dropped.Load() }

// Stack is the userspace network stack: when the link comes up it announces
// itself (a router solicitation).
type Stack struct {
	done chan struct{}
}

// Up brings the link up on its own goroutine.
func Up(t *NetTun) *Stack {
	s := &Stack{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t.WriteNotify(Packet("ICMPv6 router solicitation"))
	}()
	return s
}

// Wait waits for the stack goroutine.
func (s *Stack) Wait() { <-s.done }
