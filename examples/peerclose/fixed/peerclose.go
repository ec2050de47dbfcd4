// Package peerclose is the fixed twin of ../: CloseChannel looks the peer
// up and removes it in one critical section (the write lock), so exactly
// one of two callers finds the peer and closes its channel.
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
	m.mu.Lock()
	ch, ok := m.channels[id]
	if ok {
		delete(m.channels, id)
	}
	m.mu.Unlock()
	if ok {
		close(ch)
	}
}
