package startloop

type handler struct{ n int }

func (h *handler) handle() { h.n++ }

type server struct{ h *handler }

// Start starts the loop before the handler it calls is set.
func Start() *server {
	s := &server{}
	go s.loop()
	s.h = &handler{} // want `possible use-before-init: s.h is set in Start only after the goroutine started at startloop.go:12`
	return s
}

func (s *server) loop() { s.h.handle() }
