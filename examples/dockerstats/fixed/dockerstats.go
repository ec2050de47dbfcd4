// Package dockerstats reproduces docker/cli issue #3482 ("docker stats
// panic: send on closed channel").
//
// `docker stats --no-stream` starts a goroutine that forwards container events
// from the daemon into eventChan, and closes eventChan with a defer when it
// returns after one round of stats. A container started at the same time
// produces an event that the forwarder sends on eventChan. Normally the event
// is forwarded long before the stats round ends; if the forwarder is slow, it
// sends after the close and panics. eventChan is closed by the consumer, not by
// its sender.
//
// Kind: use-after-dispose (send on eventChan, close in RunStats).
//
// This is the fixed twin: RunStats stops the monitor (context-style done
// channel) and waits for it to return before closing eventChan, so only the
// sender side's owner closes it after the last send.
package dockerstats

import (
	"sort"
	"sync"
	"time"
)

// Event is a container lifecycle event.
type Event struct {
	Action string
	ID     string
}

// Daemon is a fake engine API.
type Daemon struct {
	statLatency time.Duration
	subscribed  chan struct{}
	subOnce     sync.Once

	mu         sync.Mutex
	containers map[string]bool
	subs       []chan Event
}

// NewDaemon returns a daemon running the named containers.
func NewDaemon(statLatency time.Duration, running ...string) *Daemon {
	d := &Daemon{statLatency: statLatency, subscribed: make(chan struct{}), containers: make(map[string]bool)}
	for _, id := range running {
		d.containers[id] = true
	}
	return d
}

// Subscribe returns a stream of events, closed by Close.
func (d *Daemon) Subscribe() <-chan Event {
	ch := make(chan Event, 16)
	d.mu.Lock()
	d.subs = append(d.subs, ch)
	d.mu.Unlock()
	d.subOnce.Do(func() { close(d.subscribed) })
	return ch
}

// Subscribed is closed once a client subscribed to events.
func (d *Daemon) Subscribed() <-chan struct{} { return d.subscribed }

// StartContainer starts a container and publishes its "start" event.
func (d *Daemon) StartContainer(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.containers[id] = true
	for _, ch := range d.subs {
		ch <- Event{Action: "start", ID: id}
	}
}

// List returns the running containers.
func (d *Daemon) List() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ids []string
	for id := range d.containers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Stats returns one stats sample of a container (an API round trip).
func (d *Daemon) Stats(id string) Stat {
	time.Sleep(d.statLatency)
	return Stat{ID: id, CPUPercent: 0.5}
}

// Close ends every event stream.
func (d *Daemon) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ch := range d.subs {
		close(ch)
	}
	d.subs = nil
}

// Stat is one line of `docker stats`.
type Stat struct {
	ID         string
	CPUPercent float64
}

var background sync.WaitGroup

// WaitBackground waits for the goroutines started by RunStats.
func WaitBackground() { background.Wait() }

type statsList struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (s *statsList) handle(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Action {
	case "start":
		s.ids[e.ID] = true
	case "die":
		delete(s.ids, e.ID)
	}
}

// RunStats is `docker stats --no-stream`: one round of stats of every
// running container.
func RunStats(d *Daemon) []Stat {
	started := make(chan struct{})
	eventChan := make(chan Event)
	cStats := &statsList{ids: make(map[string]bool)}

	stop := make(chan struct{})
	monitorDone := make(chan struct{})
	background.Add(2)
	go func() {
		defer close(monitorDone)
		monitorContainerEvents(d, started, eventChan, stop)
	}()
	go func() {
		defer background.Done()
		for e := range eventChan {
			cStats.handle(e)
		}
	}()
	defer func() {
		close(stop)
		<-monitorDone
		close(eventChan)
	}()

	<-started
	var out []Stat
	for _, id := range d.List() {
		out = append(out, d.Stats(id))
	}
	return out
}

func monitorContainerEvents(d *Daemon, started chan<- struct{}, c chan<- Event, stop <-chan struct{}) {
	defer background.Done()
	events := d.Subscribe()
	close(started)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			select {
			case c <- e:
			case <-stop:
				return
			}
		case <-stop:
			return
		}
	}
}
