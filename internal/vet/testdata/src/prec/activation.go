package prec

// A captured local read by its own call's deferred closure: the closure
// runs on the goroutine of that call, after the body, so the body's nil
// store and the closure's read are ordered, even when a goroutine of the
// package makes the same call (it has a variable of its own).

type conn struct{ n int }

func (c *conn) release() { c.n = 0 }

type pool struct {
	jobs chan func(*conn) error
}

func (p *pool) Start() {
	go p.loop()
}

func (p *pool) loop() {
	for fn := range p.jobs {
		_ = p.WithConn(fn)
	}
}

// WithConn hands fn a connection and releases it afterwards.
func (p *pool) WithConn(fn func(*conn) error) (err error) {
	var cn *conn
	defer func() {
		if cn != nil {
			cn.release()
		}
	}()
	cn = &conn{}
	if err = fn(cn); err != nil {
		cn = nil
		return err
	}
	return nil
}

// Racy hands the variable to a goroutine instead: its read may come after
// the nil store.
func (p *pool) Racy(fn func(*conn) error) (err error) {
	var cn *conn
	cn = &conn{}
	go func() {
		if cn != nil {
			cn.release()
		}
	}()
	if err = fn(cn); err != nil {
		cn = nil // want `possible use-after-dispose: cn is set to nil in \(\*pool\).Racy while the goroutine started at activation.go:\d+ may read it`
		return err
	}
	return nil
}
