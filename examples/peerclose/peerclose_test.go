package peerclose

import (
	"testing"
	"time"
)

// The account deletes the peer while its Sync stream is ending: both close
// the peer's channel, the stream's cleanup 8 ms after the deletion.
func TestDeletePeerWhileStreamEnds(t *testing.T) {
	m := NewManager()
	ch := m.CreateChannel("peer-a")
	if !m.SendUpdate("peer-a", &Update{Serial: 1}) {
		t.Fatal("update not queued")
	}
	streamDone := make(chan struct{})
	go func() { // the Sync stream
		defer close(streamDone)
		for range ch {
		}
	}()
	deleted := make(chan struct{})
	go func() { // the account deletes the peer
		defer close(deleted)
		m.CloseChannel("peer-a")
	}()
	time.Sleep(8 * time.Millisecond)
	m.CloseChannel("peer-a") // the stream's deferred cleanup
	<-deleted
	<-streamDone
	if m.SendUpdate("peer-a", &Update{Serial: 2}) {
		t.Error("update queued for a removed peer")
	}
}
