package srv

import (
	"net"
	"sort"
)

type Server struct {
	l     net.Listener
	conns []Conn
	done  chan struct{}
	n     *int
}

type Conn interface{ Close() error }

type tcpConn struct{ c *net.TCPConn }

func (t *tcpConn) Close() error { return t.c.Close() }

type pipeConn struct{ p *int }

func (p *pipeConn) Close() error { _ = *p.p; return nil }

func Run(l net.Listener) *Server {
	s := &Server{l: l, done: make(chan struct{})}
	go s.serve()
	return s
}

func (s *Server) serve() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		go s.handle(c)
	}
}

func (s *Server) handle(c net.Conn) { _ = c; _ = *s.n }

func (s *Server) Close() {
	s.l.Close()
	s.l = nil
	for _, c := range s.conns {
		c.Close()
	}
	close(s.done)
}

func (s *Server) Sorted() {
	sort.Slice(s.conns, func(i, j int) bool { return *s.n != 0 })
}

// A chain deeper than the depth bound: d0 -> d1 -> ... -> d8.
type chain struct{ p *int }

func (c *chain) d0() { c.d1() }
func (c *chain) d1() { c.d2() }
func (c *chain) d2() { c.d3() }
func (c *chain) d3() { c.d4() }
func (c *chain) d4() { c.d5() }
func (c *chain) d5() { c.d6() }
func (c *chain) d6() { _ = *c.p; c.d7() }
func (c *chain) d7() { _ = *c.p; c.d8() }
func (c *chain) d8() { _ = *c.p }

func Deep(p *int) { (&chain{p: p}).d0() }

func Other(s *Server) { close(s.done) }
