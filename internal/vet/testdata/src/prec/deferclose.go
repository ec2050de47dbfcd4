package prec

// A session's handler, run on a goroutine of the package or by a caller,
// sends on a channel of its session and closes it in a
// closure it defers: the close runs when that call returns, after its
// sends, on the same goroutine.

type window struct{ w, h int }

type session struct {
	winch chan window
	reqs  chan string
}

func Serve(reqs []chan string) {
	for _, r := range reqs {
		go HandleSession(r)
	}
}

// HandleSession serves one session on the caller's goroutine.
func HandleSession(r chan string) {
	s := &session{reqs: r}
	s.handle()
}

func (s *session) handle() {
	for r := range s.reqs {
		switch r {
		case "pty":
			s.winch = make(chan window, 1)
			s.winch <- window{80, 24}
			defer func() {
				close(s.winch)
			}()
		case "resize":
			s.winch <- window{100, 40}
		}
	}
}

// A closer started on another goroutine is not ordered after the sends.

type session2 struct {
	winch chan window
	reqs  chan string
}

func Serve2(reqs []chan string) {
	for _, r := range reqs {
		go HandleSession2(r)
	}
}

func HandleSession2(r chan string) {
	s := &session2{reqs: r, winch: make(chan window, 1)}
	s.handle()
}

func (s *session2) handle() {
	go func() {
		close(s.winch) // want `possible use-after-dispose: s.winch is closed`
	}()
	for r := range s.reqs {
		if r == "resize" {
			s.winch <- window{100, 40}
		}
	}
}
