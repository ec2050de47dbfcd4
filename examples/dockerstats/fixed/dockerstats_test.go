package dockerstats

import (
	"testing"
	"time"
)

// A container starts as soon as `docker stats` subscribes to events; the
// stats round of the one running container takes 8 ms.
func TestStatsNoStreamWhileContainerStarts(t *testing.T) {
	d := NewDaemon(8*time.Millisecond, "db")
	starter := make(chan struct{})
	go func() {
		defer close(starter)
		<-d.Subscribed()
		d.StartContainer("web")
	}()
	stats := RunStats(d)
	<-starter
	d.Close()
	WaitBackground()
	if len(stats) == 0 || stats[0].ID != "db" {
		t.Fatalf("stats = %+v, want a line for db", stats)
	}
}
