// Package natsstart follows nats-server PR #5663 ("Prevent a server from
// panicking when shutdown immediately after starting"); the start-up goroutine
// below is a reconstruction of that situation, not the PR's code.
//
// Start launches a goroutine that registers the system account's service
// imports. It checks s.shutdown under the server lock, releases the lock, and
// then uses s.sysAcc. Shutdown sets s.sysAcc to nil under the lock. Normally
// the imports are registered long before anyone shuts the server down; if the
// setup goroutine is slow, it dereferences the nil account after the check.
//
// Kind: use-after-dispose (use s.sysAcc after unlocking, dispose in Shutdown).
package natsstart

import (
	"sync"
	"time"
)

var systemImports = []string{"$SYS.REQ.SERVER.PING", "$SYS.REQ.ACCOUNT.*.CONNZ", "$SYS.REQ.SERVER.*.STATSZ"}

// Account is a NATS account.
type Account struct {
	Name string

	mu      sync.Mutex
	imports map[string]bool
}

func newAccount(name string) *Account {
	return &Account{Name: name, imports: make(map[string]bool)}
}

func (a *Account) addServiceImport(subject string) {
	a.mu.Lock()
	a.imports[subject] = true
	a.mu.Unlock()
}

// Imports reports the number of service imports of the account.
func (a *Account) Imports() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.imports)
}

// Server is a NATS server with a system account.
type Server struct {
	bindLatency time.Duration
	quit        chan struct{}
	wg          sync.WaitGroup

	mu       sync.Mutex
	shutdown bool
	ready    bool
	sysAcc   *Account
	imported int
}

// NewServer returns a server whose listener takes bindLatency to come up.
func NewServer(bindLatency time.Duration) *Server {
	return &Server{bindLatency: bindLatency, quit: make(chan struct{}), sysAcc: newAccount("$SYS")}
}

// Start starts the accept loop and the system account setup.
func (s *Server) Start() {
	s.wg.Add(2)
	go s.acceptLoop()
	go s.setupSystemImports()
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	time.Sleep(s.bindLatency) // net.Listen and TLS setup
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
	<-s.quit
}

func (s *Server) setupSystemImports() {
	defer s.wg.Done()
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	for _, subj := range systemImports {
		s.sysAcc.addServiceImport(subj) // BUG: used after the lock was released
	}
}

// ReadyForConnections polls until the listener is up or timeout passes.
func (s *Server) ReadyForConnections(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		ok := s.ready
		s.mu.Unlock()
		if ok {
			return true
		}
		time.Sleep(100 * time.Microsecond)
	}
	return false
}

// SystemAccount returns the system account (nil after Shutdown).
func (s *Server) SystemAccount() *Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sysAcc
}

// Shutdown stops the server and releases its accounts.
func (s *Server) Shutdown() {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return
	}
	s.shutdown = true
	s.sysAcc = nil
	s.mu.Unlock()
	close(s.quit)
	s.wg.Wait()
}
