package analyze

import (
	"runtime"
	"sync"

	"github.com/memorder/wafl/abi"
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
	decode() (*reorder, func(*abi.Batch))
	// batch takes a batch of pass 1. An error ends the pass; a gaveUp
	// error makes Run start over with the exact passes.
	batch(c *abi.Batch) error
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
//
// With two CPUs the pair pass is split by object between two pairers
// (objects are independent in it): sp in the analysis goroutine and side,
// which takes the objects of a share sideShare of the hash space, in the
// decoding goroutine after the rest of its work (decoding, reordering,
// counting, the interference log), which leaves that goroutine room. Each
// sees every fork row and keeps its own fork forest; their pairs and
// windows are merged at the end (the aggregates do not depend on the order
// of their instances). No batch waits for the other pairer: side is a
// batch ahead, and publishes where it gave up (rep), so that the analysis
// goroutine gives up at the batch and for the reason of the first
// offending row, as one pairer would.
type streaming struct {
	sp      *streamPairer
	side    *streamPairer // nil: not sharded
	rep     sideReport
	log     *ilog
	horizon int64 // of the reordering; ≤ 0: none
	maxHeld int   // rows the reordering may hold

	pubFail, pubFork bool // decoding goroutine: what side published
}

// sideShare is the share of the objects the side pairer takes: the
// decoding goroutine's other work is about half the pair pass's on the
// 50M-event benchmark (docs/benchmarks-analyze.md).
const sideShare = 1.0 / 3

// sideReport is where the side pairer gave up (seq 0: it did not).
type sideReport struct {
	mu               sync.Mutex
	failSeq, forkSeq int64
	failRow, forkRow int
	failWhy, forkWhy string
}

func newStreaming(a *analysis) *streaming {
	s := &streaming{
		log:     newIlog(a.delta, a.budget/2, a.tempDir),
		horizon: reorderHorizon,
		maxHeld: int(a.budget / 4 / 40), // a quarter of the budget at 40 B a row
	}
	shard := runtime.GOMAXPROCS(0) >= 2
	if a.tune.shard != 0 {
		shard = a.tune.shard > 0
	}
	if shard {
		sideBudget := int64(float64(a.budget) * sideShare)
		s.sp = newStreamPairer(a.delta, a.budget-sideBudget, int64(a.tune.waitKeep))
		s.side = newStreamPairer(a.delta, sideBudget, int64(a.tune.waitKeep))
		split := uint64(float64(1<<63) * 2 * sideShare)
		s.sp.split, s.side.split, s.side.side = split, split, true
		s.side.p.noFork = a.noFork
	} else {
		s.sp = newStreamPairer(a.delta, a.budget, int64(a.tune.waitKeep))
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

func (s *streaming) decode() (*reorder, func(*abi.Batch)) {
	pre := s.log.batch
	if s.side != nil {
		pre = s.sideBatch
	}
	if s.horizon <= 0 {
		return nil, pre
	}
	return newReorder(s.horizon, s.maxHeld), pre
}

// sideBatch is the decoding goroutine's work on a batch of pass 1 when
// the pair pass is sharded.
func (s *streaming) sideBatch(c *abi.Batch) {
	s.log.batch(c)
	sd := s.side
	sd.batch(c)
	if sd.failSeq != 0 && !s.pubFail || sd.forkSeq != 0 && !s.pubFork {
		s.rep.mu.Lock()
		if sd.failSeq != 0 && !s.pubFail {
			s.rep.failSeq, s.rep.failRow, s.rep.failWhy, s.pubFail = sd.failSeq, sd.failRow, sd.failed, true
		}
		if sd.forkSeq != 0 && !s.pubFork {
			s.rep.forkSeq, s.rep.forkRow, s.rep.forkWhy, s.pubFork = sd.forkSeq, sd.forkRow, sd.forkBad, true
		}
		s.rep.mu.Unlock()
	}
}

func (s *streaming) batch(c *abi.Batch) error {
	s.sp.batch(c)
	why := s.sp.why()
	if s.side != nil {
		why = s.why()
	}
	if why != "" {
		return gaveUp(why)
	}
	return nil
}

// why is the reason the sharded pair pass gives up after the current
// batch, "" if it goes on: that of the first row that made a pairer fail,
// else that of the first fork row one refused — the reason one pairer
// would give (streamPairer.why). The side pairer is at or past the
// current batch; what it found in a later batch is not looked at yet.
func (s *streaming) why() string {
	type at struct {
		seq int64
		row int
		why string
	}
	seq := s.sp.seq
	s.rep.mu.Lock()
	r := at{s.rep.failSeq, s.rep.failRow, s.rep.failWhy}
	f := at{s.rep.forkSeq, s.rep.forkRow, s.rep.forkWhy}
	s.rep.mu.Unlock()
	first := func(x, y at) at { // the earlier of two, seq 0 or past the batch: none
		if x.seq == 0 || x.seq > seq {
			x = at{}
		}
		if y.seq == 0 || y.seq > seq {
			return x
		}
		if x.seq == 0 || y.seq < x.seq || y.seq == x.seq && y.row < x.row {
			return y
		}
		return x
	}
	if r = first(r, at{s.sp.failSeq, s.sp.failRow, s.sp.failed}); r.seq != 0 {
		return r.why
	}
	return first(f, at{s.sp.forkSeq, s.sp.forkRow, s.sp.forkBad}).why
}

func (s *streaming) pairs(a *analysis) error {
	if err := a.finishLog(s.log); err != nil {
		return err
	}
	a.stats.Streamed = true
	a.stats.Partitions = 1
	for _, sp := range []*streamPairer{s.sp, s.side} {
		if sp == nil {
			continue
		}
		a.stats.Objects += sp.objects()
		a.tune.overwritten += sp.overwritten
		a.mergePairer(sp.p)
		sp.release()
	}
	s.sp, s.side = nil, nil
	// The streaming state is the bulk of the heap and garbage now:
	// collect it before pass 3 allocates its windows, so that the heap
	// does not grow to twice their sum.
	runtime.GC()
	return nil
}

func (s *streaming) interfere(a *analysis, w *windows) error { return a.pass3Log(s.log, w) }

func (s *streaming) close() {
	s.log.close()
	if s.sp != nil {
		s.sp.release()
	}
	if s.side != nil {
		s.side.release()
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

func (e *exact) decode() (*reorder, func(*abi.Batch)) { return nil, e.log.batch }

func (e *exact) batch(c *abi.Batch) error {
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

func (e *exactRows) decode() (*reorder, func(*abi.Batch)) { return nil, nil }

func (e *exactRows) batch(c *abi.Batch) error {
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
	return a.pass2(e.store, func(pass string, fn func(*abi.Batch)) error { return a.replay(e.rows, pass, fn) })
}

func (e *exactRows) interfere(a *analysis, w *windows) error {
	return a.replay(e.rows, "pass 3 (interference)", w.batch)
}

func (e *exactRows) close() {
	e.store.close()
	e.rows.close()
}
