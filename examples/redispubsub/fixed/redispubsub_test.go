package redispubsub

import (
	"errors"
	"io"
	"testing"
	"time"
)

// The reader blocks in Receive right away; the subscription is closed 8 ms
// later from another goroutine.
func TestCloseWhileReceiving(t *testing.T) {
	server := make(chan Message)
	ps := Subscribe(server)
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := ps.Receive(); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(8 * time.Millisecond)
	if err := ps.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) && !errors.Is(err, ErrClosed) {
			t.Fatalf("Receive after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reader still blocked after Close")
	}
}
