package prec

// What a call may initialize does not depend on where the analyzer first
// asked: Early reaches install four calls down, past the summaries' depth;
// Start calls it directly, after starting a goroutine that dereferences the
// handler install sets.

type handler struct{ n int }

type engine struct {
	h *handler
}

func (e *engine) loop() { e.h.n++ }

func (e *engine) other() {}

// Early starts a goroutine and then runs a chain that ends in install.
func (e *engine) Early() {
	go e.other()
	e.a()
}

func (e *engine) a() { e.b() }

func (e *engine) b() { e.c() }

func (e *engine) c() { e.install() }

func (e *engine) install() { e.set() }

func (e *engine) set() { e.h = &handler{} }

// Start publishes loop and only then installs the handler.
func (e *engine) Start() {
	go e.loop()
	e.install() // want `possible use-before-init: e.h is set in \(\*engine\).set, called at summary.go:\d+ only after the goroutine started at summary.go:\d+, which may read it`
}
