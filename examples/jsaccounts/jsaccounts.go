// Package jsaccounts reproduces nats-server PR #7683 ("Panic on concurrent
// JetStream startup/shutdown").
//
// While the server enables JetStream account by account, a concurrent
// shutdown (signal handler, test cleanup) resets js.accounts to nil. Enabling
// checks the map under js.mu, releases the lock to build the account state,
// and then inserts into js.accounts. Normally startup finishes long before the
// shutdown; if it is slow, the insert hits the nil map ("assignment to entry
// in nil map"). The bookkeeping under js.mu after each insert orders the
// accesses in normal runs, so `go test -race` stays silent.
//
// Kind: use-after-dispose (map write to js.accounts, dispose in shutdown).
package jsaccounts

import (
	"errors"
	"fmt"
	"sync"
)

// ErrJetStreamNotEnabled is returned when JetStream was shut down.
var ErrJetStreamNotEnabled = errors.New("jetstream not enabled")

type jsAccount struct {
	name      string
	maxMemory int64
}

type jetStream struct {
	mu       sync.Mutex
	accounts map[string]*jsAccount
	enabled  int
}

// Server is a NATS server with JetStream.
type Server struct {
	js *jetStream
}

// NewServer returns a server with JetStream initialized.
func NewServer() *Server {
	return &Server{js: &jetStream{accounts: make(map[string]*jsAccount)}}
}

// EnableJetStream enables JetStream for every named account.
func (s *Server) EnableJetStream(accounts []string) error {
	for _, name := range accounts {
		if err := s.enableAccount(name); err != nil {
			return fmt.Errorf("account %s: %w", name, err)
		}
	}
	return nil
}

func (s *Server) enableAccount(name string) error {
	js := s.js
	js.mu.Lock()
	if _, ok := js.accounts[name]; ok {
		js.mu.Unlock()
		return fmt.Errorf("jetstream already enabled")
	}
	js.mu.Unlock()

	jsa := &jsAccount{name: name, maxMemory: 1 << 30}
	js.accounts[name] = jsa // BUG: inserted after the lock was released

	js.mu.Lock()
	js.enabled++
	js.mu.Unlock()
	return nil
}

// Enabled reports how many accounts have JetStream enabled.
func (s *Server) Enabled() int {
	s.js.mu.Lock()
	defer s.js.mu.Unlock()
	return s.js.enabled
}

// Shutdown disables JetStream and releases its account state.
func (s *Server) Shutdown() {
	js := s.js
	js.mu.Lock()
	js.accounts = nil
	js.mu.Unlock()
}
