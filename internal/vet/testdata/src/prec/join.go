package prec

import "sync"

// A starter that holds a lock from the go statement through the wait for
// its goroutines runs them inside its critical section: they exclude every
// other holder of the lock.

type sentinelClient struct{ addr string }

type failover struct {
	mu    sync.Mutex
	cli   *sentinelClient
	addrs []string
}

func (f *failover) setClient(c *sentinelClient) {
	f.cli = c
	f.discover()
}

func (f *failover) discover() {
	_ = f.cli.addr
}

func (f *failover) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cli = nil
}

func (f *failover) Master() {
	f.mu.Lock()
	defer f.mu.Unlock()
	var wg sync.WaitGroup
	var once sync.Once
	for _, a := range f.addrs {
		wg.Add(1)
		go func(a string) {
			defer wg.Done()
			once.Do(func() { f.setClient(&sentinelClient{addr: a}) })
		}(a)
	}
	wg.Wait()
}

// The same with the lock released before the wait: the goroutines may run
// while Close holds it.

type failover2 struct {
	mu    sync.Mutex
	cli   *sentinelClient
	addrs []string
}

func (f *failover2) setClient(c *sentinelClient) {
	f.cli = c
	f.discover()
}

func (f *failover2) discover() {
	_ = f.cli.addr
}

func (f *failover2) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cli = nil // want `possible use-after-dispose: f.cli is set to nil in \(\*failover2\).Close while the goroutine started at join.go:\d+ may read it`
}

func (f *failover2) Master() {
	f.mu.Lock()
	var wg sync.WaitGroup
	var once sync.Once
	for _, a := range f.addrs {
		wg.Add(1)
		go func(a string) {
			defer wg.Done()
			once.Do(func() { f.setClient(&sentinelClient{addr: a}) })
		}(a)
	}
	f.mu.Unlock()
	wg.Wait()
}

// A call that waits for the goroutines it starts publishes nothing: an init
// after it comes after their reads.

type prober struct {
	cli   *sentinelClient
	addrs []string
	done  chan struct{}
}

func (p *prober) check() {
	_ = p.cli.addr
}

func (p *prober) probe() {
	var wg sync.WaitGroup
	for range p.addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.check()
		}()
	}
	wg.Wait()
}

func (p *prober) Refresh() {
	p.probe()
	p.cli = &sentinelClient{}
}

// probeAsync returns before its goroutines end.
func (p *prober) probeAsync() {
	for range p.addrs {
		go func() {
			p.check()
		}()
	}
}

func (p *prober) RefreshAsync() {
	p.probeAsync()
	p.cli = &sentinelClient{} // want `possible use-before-init: p.cli is set in \(\*prober\).RefreshAsync only after the call at join.go:\d+ started the goroutine at join.go:\d+, which may read it`
}
