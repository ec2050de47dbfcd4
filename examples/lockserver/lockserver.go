// Package lockserver reproduces the ordering bug behind nginx/agent PR #611
// ("Race condition detection"): the data-plane server's run goroutine builds
// its router and then, under serverMutex, creates dps.server; Close, which
// runs in its own goroutine, takes the mutex and shuts dps.server down. The
// PR's mutex made every access race-free, but Close still finds a nil server
// when it runs before run has created it ("it is very unlikely that we will
// call the two functions at the same time").
//
// Kind: use-before-init (init dps.server in run under Lock, use in Close
// under RLock taken with a deferred RUnlock).
package lockserver

import (
	"strings"
	"sync"
)

// HTTPServer is the HTTP server the plugin runs.
type HTTPServer struct {
	Addr    string
	Handler string
	closed  bool
}

// Shutdown stops the server.
func (h *HTTPServer) Shutdown() { h.closed = true }

// DataPlaneServer is the agent's data-plane API plugin.
type DataPlaneServer struct {
	address     string
	serverMutex sync.RWMutex
	server      *HTTPServer
	started     chan struct{}
}

// New returns the plugin for address.
func New(address string) *DataPlaneServer {
	return &DataPlaneServer{address: address, started: make(chan struct{})}
}

// Init starts the plugin in the background.
func (dps *DataPlaneServer) Init() {
	go dps.run()
}

func (dps *DataPlaneServer) run() {
	defer close(dps.started)
	router := routes()
	dps.serverMutex.Lock()
	dps.server = &HTTPServer{Addr: dps.address, Handler: router} // init under the lock
	dps.serverMutex.Unlock()
}

// routes builds the router: a little work before the server exists.
func routes() string {
	var b strings.Builder
	for i := 0; i < 200; i++ {
		b.WriteString("/api/v1/instances;")
	}
	return b.String()
}

// Close shuts the server down.
func (dps *DataPlaneServer) Close() {
	dps.serverMutex.RLock()
	defer dps.serverMutex.RUnlock()
	dps.server.Shutdown() // BUG: nil when run has not created it yet
}

// Started is closed once run has finished its setup.
func (dps *DataPlaneServer) Started() <-chan struct{} { return dps.started }
