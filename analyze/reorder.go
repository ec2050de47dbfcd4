package analyze

import (
	"container/heap"
	"math"
	"time"
)

// reorderHorizon is how far behind the latest row a row may arrive and
// still be put back in time order for the streaming pair pass. The
// recorder writes each shard's buffer when it is full or every 25 ms, so
// its traces are sorted runs interleaved with about that much lag.
const reorderHorizon = int64(100 * time.Millisecond)

// reorder restores time order in a stream made of sorted runs that
// interleave with bounded lag (a trace converted from the recorder's
// per-shard buffers): it cuts the input into maximal runs of
// non-decreasing time and merges them, releasing a row once the latest
// time seen is horizon past it. A row later than that is released as
// soon as possible, out of order; the streaming pair pass then notices
// if it matters. So that memory stays bounded whatever the times (say,
// millions of rows with one timestamp), more than maxHeld rows held are
// released down to half of that regardless of the horizon.
type reorder struct {
	horizon int64
	held    int // rows not yet released
	maxHeld int // beyond it the earliest rows are released anyway
	maxT    int64
	runs    runHeap // runs with rows left, by head time
	last    *orun   // the run the next row may extend
	spare   []*orun
}

type orun struct {
	rows  []orow
	pos   int
	lastT int64
}

type orow struct {
	t     int64
	g     uint64
	obj   uint64
	clock uint32
	site  uint32
	op    uint8
}

type runHeap []*orun

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return h[i].rows[h[i].pos].t < h[j].rows[h[j].pos].t }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*orun)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newReorder(horizon int64, maxHeld int) *reorder {
	return &reorder{horizon: horizon, maxHeld: max(maxHeld, 1), maxT: math.MinInt64}
}

// add takes the rows of c (copied).
func (r *reorder) add(c *Columns) {
	n := c.Len()
	tm, g, obj, clk, site, op := c.Time[:n], c.G[:n], c.Obj[:n], c.Clock[:n], c.Site[:n], c.Op[:n]
	for i := 0; i < n; {
		run := r.last
		if run == nil || tm[i] < run.lastT {
			run = r.newRun()
			r.last = run
		}
		wasEmpty := run.pos == len(run.rows)
		// the longest non-decreasing stretch from i
		j := i + 1
		for j < n && tm[j] >= tm[j-1] {
			j++
		}
		for k := i; k < j; k++ {
			run.rows = append(run.rows, orow{tm[k], g[k], obj[k], clk[k], site[k], op[k]})
		}
		r.held += j - i
		run.lastT = tm[j-1]
		r.maxT = max(r.maxT, tm[j-1])
		if wasEmpty {
			heap.Push(&r.runs, run)
		}
		i = j
	}
}

func (r *reorder) newRun() *orun {
	if k := len(r.spare); k > 0 {
		run := r.spare[k-1]
		r.spare = r.spare[:k-1]
		return run
	}
	return &orun{}
}

// drain appends to out, up to cap(out.Time) rows, the rows released:
// those at least horizon behind the latest time, or all when final. It
// reports whether rows may remain to be released now.
func (r *reorder) drain(out *Columns, final bool) bool {
	limit := int64(math.MaxInt64)
	if !final && r.held <= r.maxHeld {
		if r.maxT < math.MinInt64+r.horizon {
			return false
		}
		limit = r.maxT - r.horizon
	}
	for len(r.runs) > 0 {
		if limit == math.MaxInt64 && !final && r.held <= r.maxHeld/2 {
			return r.drain(out, false)
		}
		run := r.runs[0]
		// Release from the earliest run up to the next run's head.
		bound := limit
		if len(r.runs) > 1 {
			next := r.runs[1]
			if len(r.runs) > 2 && r.runs.Less(2, 1) {
				next = r.runs[2]
			}
			bound = min(bound, next.rows[next.pos].t)
		}
		k := run.pos
		room := cap(out.Time) - len(out.Time)
		for k < len(run.rows) && run.rows[k].t <= bound && k-run.pos < room {
			k++
		}
		if k == run.pos {
			if run.rows[k].t > limit {
				return false
			}
			if room == 0 {
				return true
			}
			k++ // a tie with the next run's head: take one row
		}
		for _, w := range run.rows[run.pos:k] {
			out.Time = append(out.Time, w.t)
			out.G = append(out.G, w.g)
			out.Obj = append(out.Obj, w.obj)
			out.Clock = append(out.Clock, w.clock)
			out.Site = append(out.Site, w.site)
			out.Op = append(out.Op, w.op)
		}
		r.held -= k - run.pos
		run.pos = k
		if run.pos == len(run.rows) {
			heap.Pop(&r.runs)
			run.rows, run.pos = run.rows[:0], 0
			if run == r.last {
				r.last = nil
			}
			r.spare = append(r.spare, run)
		} else {
			if run.pos >= 4096 && 2*run.pos >= len(run.rows) {
				m := copy(run.rows, run.rows[run.pos:])
				run.rows, run.pos = run.rows[:m], 0
			}
			heap.Fix(&r.runs, 0)
		}
		if len(out.Time) == cap(out.Time) {
			return true
		}
	}
	return false
}
