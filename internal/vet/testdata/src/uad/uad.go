// Package uad holds use-after-dispose cases: a slot a goroutine may use
// after another function set it to nil or closed it.
package uad

import "sync"

type conn struct{ n int }

func (c *conn) read() int { return c.n }

// Positive: Close clears the field the goroutine reads.
type racy struct{ c *conn }

func newRacy() *racy {
	s := &racy{c: &conn{}}
	go s.loop()
	return s
}

func (s *racy) loop() { s.c.read() }

func (s *racy) Close() {
	s.c = nil // want `possible use-after-dispose: s.c is set to nil in \(\*racy\).Close while the goroutine started at uad.go:\d+ may read it at uad.go:\d+`
}

// Negative: Close waits for the goroutine (WaitGroup) first.
type joined struct {
	c  *conn
	wg sync.WaitGroup
}

func newJoined() *joined {
	s := &joined{c: &conn{}}
	s.wg.Add(1)
	go s.loop()
	return s
}

func (s *joined) loop() {
	defer s.wg.Done()
	s.c.read()
}

func (s *joined) Close() {
	s.wg.Wait()
	s.c = nil
}

// Negative: Close receives from a channel the goroutine closes when done.
type done struct {
	c    *conn
	done chan struct{}
}

func newDone() *done {
	s := &done{c: &conn{}, done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *done) loop() {
	defer close(s.done)
	s.c.read()
}

func (s *done) Close() {
	<-s.done
	s.c = nil
}

// Positive twin of done: the receive comes after the dispose.
type late struct {
	c    *conn
	done chan struct{}
}

func newLate() *late {
	s := &late{c: &conn{}, done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *late) loop() {
	defer close(s.done)
	s.c.read()
}

func (s *late) Close() {
	s.c = nil // want `possible use-after-dispose: s.c is set to nil`
	<-s.done
}

// Negative: the same mutex held over the use and the dispose.
type locked struct {
	mu sync.Mutex
	c  *conn
}

func newLocked() *locked {
	s := &locked{c: &conn{}}
	go s.loop()
	return s
}

func (s *locked) loop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.read()
}

func (s *locked) Close() {
	s.mu.Lock()
	s.c = nil
	s.mu.Unlock()
}

// Negative: the goroutine checks what it loaded.
type nilChecked struct{ c *conn }

func newNilChecked() *nilChecked {
	s := &nilChecked{c: &conn{}}
	go s.loop()
	return s
}

func (s *nilChecked) loop() {
	if c := s.c; c != nil {
		c.read()
	}
}

func (s *nilChecked) Close() { s.c = nil }

// Positive: a channel closed while the goroutine may still send on it;
// negative twin: the goroutine is joined first.
func Produce(n int) {
	out := make(chan int, n)
	go func() {
		for i := 0; i < n; i++ {
			out <- i
		}
	}()
	close(out) // want `possible use-after-dispose: out is closed in Produce while the goroutine started at uad.go:\d+ may send on it at uad.go:\d+`
}

func ProduceJoined(n int) {
	out := make(chan int, n)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := 0; i < n; i++ {
			out <- i
		}
	}()
	<-finished
	close(out)
}

// Positive: both sides called by the package's users; the dispose holds a
// lock the use does not take.
type pubsub struct {
	mu     sync.Mutex
	closed bool
	c      *conn
}

func (p *pubsub) Receive() int {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return 0
	}
	return p.c.read()
}

func (p *pubsub) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.c = nil // want `possible use-after-dispose: p.c is set to nil in \(\*pubsub\).Close under p.mu, while \(\*pubsub\).Receive may read it at uad.go:\d+ without holding it`
}

// Negative twin: the use reads the field under the lock and checks it.
type pubsub2 struct {
	mu sync.Mutex
	c  *conn
}

func (p *pubsub2) Receive() int {
	p.mu.Lock()
	c := p.c
	p.mu.Unlock()
	if c == nil {
		return 0
	}
	return c.read()
}

func (p *pubsub2) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c = nil
}

// Positive: a captured variable set to nil while the goroutine that
// captured it may not have used it; negative twin: after a receive from
// the channel the goroutine sends on after its use.
func Capture() {
	c := &conn{}
	ch := make(chan int)
	go func() {
		ch <- c.read()
	}()
	c = nil // want `possible use-after-dispose: c is set to nil in Capture while the goroutine started at uad.go:\d+ may read it`
	<-ch
}

func CaptureJoined() {
	c := &conn{}
	ch := make(chan int)
	go func() {
		ch <- c.read()
	}()
	<-ch
	c = nil
	_ = c
}

// Negative: the goroutine answers a stop request on done and returns;
// Close receives that answer before it closes done.
type stopper struct {
	stop chan struct{}
	done chan struct{}
	in   chan int
}

func NewStopper() *stopper {
	s := &stopper{stop: make(chan struct{}), done: make(chan struct{}), in: make(chan int)}
	go s.run()
	return s
}

func (s *stopper) run() {
	for {
		select {
		case <-s.in:
		case <-s.stop:
			s.done <- struct{}{}
			return
		}
	}
}

func (s *stopper) Close() {
	s.stop <- struct{}{}
	<-s.done
	close(s.stop)
	close(s.done)
}

// Negative: the goroutines may call Run again (through the hook), but that
// call adds to a WaitGroup of its own; this call's Wait orders every send
// before the close.
type pipe struct{ hook func(int) error }

func newPipe() *pipe {
	p := &pipe{}
	p.hook = func(n int) error { return p.Run(n - 1) }
	return p
}

func (p *pipe) Run(n int) error {
	if n <= 0 {
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.hook(i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
