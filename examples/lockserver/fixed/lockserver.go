// Package lockserver is the fixed twin of ../: Close checks for a server
// that does not exist yet (the shutdown then has nothing to stop).
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
	dps.server = &HTTPServer{Addr: dps.address, Handler: router}
	dps.serverMutex.Unlock()
}

func routes() string {
	var b strings.Builder
	for i := 0; i < 200; i++ {
		b.WriteString("/api/v1/instances;")
	}
	return b.String()
}

// Close shuts the server down, if it was created.
func (dps *DataPlaneServer) Close() {
	dps.serverMutex.RLock()
	defer dps.serverMutex.RUnlock()
	if dps.server != nil {
		dps.server.Shutdown()
	}
}

// Started is closed once run has finished its setup.
func (dps *DataPlaneServer) Started() <-chan struct{} { return dps.started }
