// Package publishclose reproduces a panic in
// github.com/ThreeDotsLabs/watermill v1.5.1's pubsub/gochannel: Publish
// racing Close on a persistent GoChannel writes into the map Close has set
// to nil ("assignment to entry in nil map", pubsub.go:118).
//
//	go test -run TestPublishCloseRace .   # plain: fails in most runs
//	go test -run TestPublishThenClose .   # passes plainly; fails every time with
//	                                      # sleep.patch applied to a scratch copy
package publishclose

import (
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// TestPublishCloseRace publishes and closes at once, many times. Publish
// after Close is documented to return an error, so every schedule here is
// one the API allows.
func TestPublishCloseRace(t *testing.T) {
	for i := 0; i < 20000; i++ {
		g := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = g.Publish("t", message.NewMessage(watermill.NewUUID(), nil)) }()
		go func() { defer wg.Done(); _ = g.Close() }()
		wg.Wait()
	}
}

// TestPublishThenClose: a publish in flight when the Pub/Sub shuts down a
// millisecond later. It passes unless Publish is descheduled between its
// isClosed check and its write to persistedMessages.
func TestPublishThenClose(t *testing.T) {
	g := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Publish("t", message.NewMessage(watermill.NewUUID(), nil)) }()
	time.Sleep(time.Millisecond)
	_ = g.Close()
	<-done
}
