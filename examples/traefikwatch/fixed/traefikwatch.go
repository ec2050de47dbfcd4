// Package traefikwatch follows traefik issue #1794 ("traefik crashes when
// kubernetes secret is used for basic auth": "send on closed channel" observed
// in a client-go informer goroutine); the provider below is a reconstruction.
//
// The Kubernetes provider's WatchAll registers informer event handlers that
// send every change on eventCh, and starts a goroutine that closes eventCh when
// the watch is stopped. The informers run on their own goroutines, so a handler
// can still be sending when the stop goroutine closes the channel. Normally the
// initial LIST events are sent long before the provider stops; if the informer
// goroutine is slow, the handler sends on the closed channel. In normal runs
// the send is ordered before the close through the provider's receive and
// mutex, so `go test -race` stays silent.
//
// Kind: use-after-dispose (send on eventCh, close by the stop goroutine).
//
// This is the fixed twin: eventCh is never closed; the handlers stop sending
// once stopCh is closed, and the consumer stops on stopCh.
package traefikwatch

import (
	"sync"
)

// Informer delivers the objects of one resource kind to its handler.
type Informer struct {
	objects []string
	handler func(obj string)
}

func (inf *Informer) run(stopCh <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	for _, o := range inf.objects { // initial LIST
		inf.handler(o)
	}
	<-stopCh
}

// Client watches Kubernetes resources.
type Client struct {
	resources map[string][]string
	wg        sync.WaitGroup
}

// NewClient returns a client over the given objects per resource kind.
func NewClient(resources map[string][]string) *Client {
	return &Client{resources: resources}
}

// WatchAll starts an informer per resource and returns the channel of change
// notifications.
func (c *Client) WatchAll(stopCh <-chan struct{}) <-chan interface{} {
	eventCh := make(chan interface{}, 1)
	for _, objs := range c.resources {
		inf := &Informer{objects: objs, handler: func(obj string) {
			select {
			case <-stopCh:
				return
			default:
			}
			select {
			case eventCh <- obj:
			default: // a notification is already pending
			}
		}}
		c.wg.Add(1)
		go inf.run(stopCh, &c.wg)
	}
	return eventCh
}

// Wait waits for the informers to stop.
func (c *Client) Wait() { c.wg.Wait() }

// Provider builds the routing configuration from watch notifications.
type Provider struct {
	client *Client
	stop   chan struct{}
	done   chan struct{}

	mu      sync.Mutex
	reloads int
}

// Start starts watching.
func (p *Provider) Start(c *Client) {
	p.client = c
	p.stop = make(chan struct{})
	p.done = make(chan struct{})
	events := c.WatchAll(p.stop)
	stop := p.stop
	go func() {
		defer close(p.done)
		for {
			select {
			case <-events:
				p.mu.Lock()
				p.reloads++
				p.mu.Unlock()
			case <-stop:
				return
			}
		}
	}()
}

// Reloads reports how many configuration reloads happened.
func (p *Provider) Reloads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reloads
}

// Stop stops the watch and waits for the provider and informers.
func (p *Provider) Stop() {
	close(p.stop)
	<-p.done
	p.client.Wait()
}
