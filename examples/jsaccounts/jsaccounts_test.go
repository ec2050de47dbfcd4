package jsaccounts

import (
	"errors"
	"testing"
	"time"
)

// The shutdown comes 8 ms after startup begins; enabling three accounts takes
// microseconds.
func TestConcurrentStartupShutdown(t *testing.T) {
	s := NewServer()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		time.Sleep(8 * time.Millisecond)
		s.Shutdown()
	}()
	err := s.EnableJetStream([]string{"A", "B", "C"})
	<-stopped
	if err != nil && !errors.Is(err, ErrJetStreamNotEnabled) {
		t.Fatalf("EnableJetStream: %v", err)
	}
	if err == nil && s.Enabled() != 3 {
		t.Fatalf("enabled accounts = %d, want 3", s.Enabled())
	}
}
