package natsstart

import (
	"testing"
	"time"
)

// The listener needs 8 ms to come up; the system imports are registered
// microseconds after Start, so Shutdown normally comes after them.
func TestShutdownRightAfterStart(t *testing.T) {
	s := NewServer(8 * time.Millisecond)
	s.Start()
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("server not ready")
	}
	acc := s.SystemAccount()
	if acc == nil {
		t.Fatal("no system account")
	}
	s.Shutdown()
	if s.SystemAccount() != nil {
		t.Fatal("system account survived Shutdown")
	}
	if n := acc.Imports(); n != 0 && n != len(systemImports) {
		t.Fatalf("system account has %d imports, want 0 or %d", n, len(systemImports))
	}
}
