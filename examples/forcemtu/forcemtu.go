// Package forcemtu reproduces tailscale/wireguard-go PR #17 (upstreamed as
// WireGuard/wireguard-go PR #91): "tun: fix crash when ForceMTU is called
// after close" (tailscale issue #9555).
//
// The TUN device reports MTU changes on its events channel; Close closes that
// channel. ForceMTU, called by the link monitor on its own goroutine, sends an
// EventMTUUpdate without checking whether the device was closed. Normally the
// link monitor forces the MTU right after the device comes up, long before
// the device is closed; if it is slow, ForceMTU sends on the closed channel.
//
// Kind: use-after-dispose (send on tun.events in ForceMTU, close in Close).
package forcemtu

import (
	"sync"
)

// Event is a TUN device event.
type Event int

const (
	// EventUp is sent when the device comes up.
	EventUp Event = 1 << iota
	// EventMTUUpdate is sent when the MTU changes.
	EventMTUUpdate
)

// Device is a TUN device.
type Device struct {
	events chan Event

	mu  sync.Mutex
	mtu int
}

// New returns an open device with the given MTU.
func New(mtu int) *Device {
	d := &Device{events: make(chan Event, 10), mtu: mtu}
	d.events <- EventUp
	return d
}

// Events returns the device's event channel, closed by Close.
func (d *Device) Events() <-chan Event { return d.events }

// ForceMTU overrides the device MTU and announces the change.
func (d *Device) ForceMTU(mtu int) {
	d.mu.Lock()
	changed := d.mtu != mtu
	d.mtu = mtu
	d.mu.Unlock()
	if changed {
		d.events <- EventMTUUpdate // BUG: the device may have been closed
	}
}

// MTU returns the current MTU.
func (d *Device) MTU() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mtu
}

// Close closes the device.
func (d *Device) Close() error {
	close(d.events)
	return nil
}

// Monitor watches the link and forces the MTU of the device to the path MTU.
type Monitor struct {
	done chan struct{}
}

// StartMonitor starts the link monitor; it adjusts the MTU as soon as it has
// probed the path.
func StartMonitor(d *Device, pathMTU int) *Monitor {
	m := &Monitor{done: make(chan struct{})}
	go func() {
		defer close(m.done)
		d.ForceMTU(pathMTU)
	}()
	return m
}

// Wait waits for the monitor goroutine.
func (m *Monitor) Wait() { <-m.done }
