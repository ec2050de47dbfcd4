// Package progress reports a long wafl workflow on standard error: on a
// terminal a live status line (phase, tests done/total, bugs so far,
// elapsed), otherwise one plain line per finished test.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Bar reports long work: on a terminal a live status line (phase,
// tests done/total, bugs so far, elapsed), otherwise plain lines.
type Bar struct {
	mu      sync.Mutex
	w       io.Writer
	live    bool
	phase   string
	done    int
	total   int
	bugs    int
	start   time.Time
	stop    chan struct{}
	stopped chan struct{}
	shown   bool
}

// New returns a Bar writing to w; live when w is a terminal.
func New(w io.Writer) *Bar {
	p := &Bar{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		p.live = true
		p.stop = make(chan struct{})
		p.stopped = make(chan struct{})
		go p.loop()
	}
	return p
}

func (p *Bar) loop() {
	defer close(p.stopped)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

// drawLocked redraws the status line.
func (p *Bar) drawLocked() {
	if !p.live || p.total == 0 {
		return
	}
	bugs := "no bugs"
	switch p.bugs {
	case 0:
	case 1:
		bugs = "1 bug"
	default:
		bugs = fmt.Sprintf("%d bugs", p.bugs)
	}
	fmt.Fprintf(p.w, "\r\033[K%s: %d/%d tests, %s, %s", p.phase, p.done, p.total, bugs,
		time.Since(p.start).Round(time.Second))
	p.shown = true
}

// clearLocked removes the status line so that a message can be printed.
func (p *Bar) clearLocked() {
	if p.live && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// Begin starts a phase with total units of work.
func (p *Bar) Begin(phase string, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.total, p.done = phase, total, 0
	p.drawLocked()
}

// Done counts one unit as finished and, when not on a terminal, prints line.
func (p *Bar) Done(bugs int, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.bugs += bugs
	if !p.live && format != "" {
		fmt.Fprintf(p.w, "%s [%d/%d] %s\n", p.phase, p.done, p.total, fmt.Sprintf(format, args...))
	}
	p.drawLocked()
}

// Printf prints a line above the status line.
func (p *Bar) Printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	fmt.Fprintf(p.w, format, args...)
	p.drawLocked()
}

// Close removes the status line and stops redrawing.
func (p *Bar) Close() {
	if p.live {
		close(p.stop)
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}
