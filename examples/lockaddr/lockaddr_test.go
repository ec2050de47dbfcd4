package lockaddr

import (
	"testing"
	"time"
)

// clientConfig is the test's own setup between Start and Addr (dialing
// options, TLS material): long enough that the serving goroutine has set
// the listener in a plain run.
func clientConfig() string {
	time.Sleep(50 * time.Millisecond)
	return "spec"
}

func TestAddr(t *testing.T) {
	s := NewServer(8583)
	s.Start()
	cfg := clientConfig()
	if got := s.Addr(); got != "127.0.0.1:8583" || cfg == "" {
		t.Fatalf("Addr = %q", got)
	}
	s.Wait()
}
