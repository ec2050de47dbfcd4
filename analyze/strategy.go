package analyze

import (
	"runtime"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

// strategy is how an analysis finds its pair instances and what its
// interference pass (pass 3) reads. The analysis runs pass 1 and hands
// each batch to the strategy; then the strategy finds the pairs, and
// pass 3 matches the rows it kept against the windows of S.
//
//   - streaming pairs the rows as pass 1 reads them, put back in time
//     order (stream.go, reorder.go), and logs what pass 3 needs (ilog.go):
//     one pass over the trace. It gives up when the trace's order defeats
//     it, and Run starts over with exact.
//   - exact keeps the lifecycle rows (lifecycle.go) and the log; pass 2
//     reads the trace again and pairs each use against an index of them.
//   - exactRows is exact with passes 2 and 3 reading a compact copy of
//     the trace's rows written in pass 1 (rows.go) instead of the trace
//     and the log (Options.RowSpill).
type strategy interface {
	// decode returns what pass 1's decoding goroutine does before the
	// analysis sees a batch: put the rows back in time order (nil: no)
	// and run a function on the batch (nil: none).
	decode() (*reorder, func(*trace.Batch))
	// batch takes a batch of pass 1. An error ends the pass; a gaveUp
	// error makes Run start over with the exact passes.
	batch(c *trace.Batch) error
	// pairs finds the pair instances, with the fork forest built, and
	// merges them into the analysis.
	pairs(a *analysis) error
	// interfere runs pass 3 over the rows kept for it.
	interfere(a *analysis, w *windows) error
	// close releases what the strategy holds: temporary files and memory
	// outside the heap.
	close()
}

// gaveUp is the error with which the streaming strategy ends pass 1: the
// trace breaks one of its assumptions, for the given reason.
type gaveUp string

func (g gaveUp) Error() string { return "streaming pass gave up: " + string(g) }

// streaming is the one-pass strategy (streamPairer).
type streaming struct {
	sp      *streamPairer
	log     *ilog
	horizon int64 // of the reordering; ≤ 0: none
	maxHeld int   // rows the reordering may hold
}

func newStreaming(a *analysis) *streaming {
	s := &streaming{
		sp:      newStreamPairer(a.delta, a.budget, int64(a.tune.waitKeep)),
		log:     newIlog(a.delta, a.budget/2, a.tempDir),
		horizon: reorderHorizon,
		maxHeld: int(a.budget / 4 / 40), // a quarter of the budget at 40 B a row
	}
	s.sp.p.noFork = a.noFork
	if a.tune.reorderHorizon != 0 {
		s.horizon = int64(a.tune.reorderHorizon)
	}
	if a.tune.reorderMax > 0 {
		s.maxHeld = a.tune.reorderMax
	}
	return s
}

func (s *streaming) decode() (*reorder, func(*trace.Batch)) {
	if s.horizon <= 0 {
		return nil, s.log.batch
	}
	return newReorder(s.horizon, s.maxHeld), s.log.batch
}

func (s *streaming) batch(c *trace.Batch) error {
	s.sp.batch(c)
	if why := s.sp.why(); why != "" {
		return gaveUp(why)
	}
	return nil
}

func (s *streaming) pairs(a *analysis) error {
	if err := a.finishLog(s.log); err != nil {
		return err
	}
	a.stats.Streamed = true
	a.stats.Partitions = 1
	a.stats.Objects = s.sp.objects()
	a.tune.overwritten = s.sp.overwritten
	a.mergePairer(s.sp.p)
	big := s.sp.memory() >= collectAfter
	s.sp.release()
	s.sp = nil
	if big {
		// The streaming state of a large trace is the bulk of the heap
		// and garbage now: collect it before pass 3 allocates its
		// windows, so that the heap does not grow to twice their sum.
		// A small one is not worth a collection (a few ms of CPU each,
		// once per test of a package).
		runtime.GC()
	}
	return nil
}

// collectAfter is the size of streaming state from which the analysis
// collects the heap before its third pass.
const collectAfter = 64 << 20

func (s *streaming) interfere(a *analysis, w *windows) error { return a.pass3Log(s.log, w) }

func (s *streaming) close() {
	s.log.close()
	if s.sp != nil {
		s.sp.release()
	}
}

// exact is the strategy of the exact passes over the trace.
type exact struct {
	store *lifecycleStore
	log   *ilog
}

func newExact(a *analysis) *exact {
	return &exact{store: newLifecycleStore(a.budget, a.tempDir), log: newIlog(a.delta, a.budget/2, a.tempDir)}
}

func (e *exact) decode() (*reorder, func(*trace.Batch)) { return nil, e.log.batch }

func (e *exact) batch(c *trace.Batch) error {
	n := c.Len()
	for i, op := range c.Op[:n] {
		if op := abi.Op(op); (op == abi.OpInit || op == abi.OpDispose) && validSite(c.Site[i]) {
			if err := e.store.add(lcEvent{obj: c.Obj[i], time: c.Time[i], g: c.G[i], clock: c.Clock[i], site: c.Site[i], op: op}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *exact) pairs(a *analysis) error {
	if err := a.finishLog(e.log); err != nil {
		return err
	}
	return a.pass2(e.store, a.rescan)
}

func (e *exact) interfere(a *analysis, w *windows) error { return a.pass3Log(e.log, w) }

func (e *exact) close() {
	e.store.close()
	e.log.close()
}

// exactRows is the strategy of the exact passes over the row spill.
type exactRows struct {
	store *lifecycleStore
	rows  *rowSpill
}

func newExactRows(a *analysis) (*exactRows, error) {
	rows, err := newRowSpill(a.tempDir)
	if err != nil {
		return nil, err
	}
	return &exactRows{store: newLifecycleStore(a.budget, a.tempDir), rows: rows}, nil
}

func (e *exactRows) decode() (*reorder, func(*trace.Batch)) { return nil, nil }

func (e *exactRows) batch(c *trace.Batch) error {
	n := c.Len()
	for i, op := range c.Op[:n] {
		op := abi.Op(op)
		if !op.Sited() || !validSite(c.Site[i]) {
			continue
		}
		if err := e.rows.add(c, i); err != nil {
			return err
		}
		if op == abi.OpInit || op == abi.OpDispose {
			if err := e.store.add(lcEvent{obj: c.Obj[i], time: c.Time[i], g: c.G[i], clock: c.Clock[i], site: c.Site[i], op: op}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *exactRows) pairs(a *analysis) error {
	a.stats.RowSpill = true
	if err := e.rows.flush(); err != nil {
		return err
	}
	return a.pass2(e.store, func(pass string, fn func(*trace.Batch)) error { return a.replay(e.rows, pass, fn) })
}

func (e *exactRows) interfere(a *analysis, w *windows) error {
	return a.replay(e.rows, "pass 3 (interference)", w.batch)
}

func (e *exactRows) close() {
	e.store.close()
	e.rows.close()
}
