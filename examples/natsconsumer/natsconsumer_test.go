package natsconsumer

import (
	"testing"
	"time"
)

// The consumer computes its pending count as soon as it starts; the stream is
// deleted after eight publishes spaced 1 ms apart.
func TestDeleteStreamWithConsumer(t *testing.T) {
	mset := NewStream("ORDERS")
	o := mset.AddConsumer()
	var last uint64
	for i := 0; i < 8; i++ {
		last = mset.Publish("orders.new")
		time.Sleep(time.Millisecond)
	}
	if last != 8 {
		t.Fatalf("last sequence = %d, want 8", last)
	}
	mset.Delete()
	select {
	case <-o.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("consumer did not stop")
	}
}
