// Package peerclose follows the peer update channels of openzro's
// management server (https://github.com/openzro/openzro/issues/144; the
// same code as netbird's PeersUpdateManager): a map from peer id to the
// channel a peer's Sync stream reads its updates from, guarded by an
// RWMutex, with the entry looked up under the read lock and acted on after
// the lock is released. Here the act is CloseChannel's own removal: it
// looks the peer up under RLock, and if the peer is there removes it under
// Lock and closes its channel. A peer's channel is closed twice — by the
// account deleting the peer, and by the peer's Sync stream ending — and in
// every delay-free run the second call comes 8 ms later, finds no
// entry and returns: its close never executes. If the first closer is
// preempted between its lookup and its removal, both find the entry and
// both close: "close of closed channel".
//
// Kind: check-then-act (check: the map lookup; act: delete and close).
package peerclose

import "sync"

// Update is one network map update for a peer.
type Update struct{ Serial uint64 }

// Manager holds the update channel of every connected peer.
type Manager struct {
	mu       sync.RWMutex
	channels map[string]chan *Update
}

// NewManager returns a manager without peers.
func NewManager() *Manager {
	return &Manager{channels: make(map[string]chan *Update)}
}

// CreateChannel registers peer id and returns the channel its Sync stream
// reads updates from.
func (m *Manager) CreateChannel(id string) chan *Update {
	ch := make(chan *Update, 16)
	m.mu.Lock()
	m.channels[id] = ch
	m.mu.Unlock()
	return ch
}

// SendUpdate queues an update for peer id, if it is connected.
func (m *Manager) SendUpdate(id string, u *Update) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ch, ok := m.channels[id]
	if !ok {
		return false
	}
	select {
	case ch <- u:
		return true
	default:
		return false
	}
}

// CloseChannel removes peer id and closes its update channel.
func (m *Manager) CloseChannel(id string) {
	m.mu.RLock()
	ch, ok := m.channels[id]
	m.mu.RUnlock()
	if !ok {
		return
	}
	// BUG: another CloseChannel of the same peer may have looked it up
	// meanwhile; the lookup and the removal are not one critical section.
	m.mu.Lock()
	delete(m.channels, id)
	m.mu.Unlock()
	close(ch)
}
