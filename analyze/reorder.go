package analyze

import (
	"container/heap"
	"math"
	"time"

	"github.com/memorder/wafl/internal/trace"
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

// orun is one sorted run, in column form (so rows move in bulk); rows
// before pos are released.
type orun struct {
	c     trace.Batch
	pos   int
	lastT int64
}

func (o *orun) head() int64 { return o.c.Time[o.pos] }

type runHeap []*orun

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return h[i].head() < h[j].head() }
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
func (r *reorder) add(c *trace.Batch) {
	n := c.Len()
	tm, g, obj, clk, site, op := c.Time[:n], c.G[:n], c.Obj[:n], c.Clock[:n], c.Site[:n], c.Op[:n]
	for i := 0; i < n; {
		run := r.last
		if run == nil || tm[i] < run.lastT {
			run = r.newRun()
			r.last = run
		}
		wasEmpty := run.pos == len(run.c.Time)
		// the longest non-decreasing stretch from i
		j := i + 1
		for j < n && tm[j] >= tm[j-1] {
			j++
		}
		rc := &run.c
		rc.Time = append(rc.Time, tm[i:j]...)
		rc.G = append(rc.G, g[i:j]...)
		rc.Obj = append(rc.Obj, obj[i:j]...)
		rc.Clock = append(rc.Clock, clk[i:j]...)
		rc.Site = append(rc.Site, site[i:j]...)
		rc.Op = append(rc.Op, op[i:j]...)
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
func (r *reorder) drain(out *trace.Batch, final bool) bool {
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
			bound = min(bound, next.head())
		}
		k := run.pos
		room := cap(out.Time) - len(out.Time)
		rt := run.c.Time
		for k < len(rt) && rt[k] <= bound && k-run.pos < room {
			k++
		}
		if k == run.pos {
			if rt[k] > limit {
				return false
			}
			if room == 0 {
				return true
			}
			k++ // a tie with the next run's head: take one row
		}
		rc, p := &run.c, run.pos
		out.Time = append(out.Time, rc.Time[p:k]...)
		out.G = append(out.G, rc.G[p:k]...)
		out.Obj = append(out.Obj, rc.Obj[p:k]...)
		out.Clock = append(out.Clock, rc.Clock[p:k]...)
		out.Site = append(out.Site, rc.Site[p:k]...)
		out.Op = append(out.Op, rc.Op[p:k]...)
		r.held -= k - run.pos
		run.pos = k
		if run.pos == len(rc.Time) {
			heap.Pop(&r.runs)
			rc.Reset()
			run.pos = 0
			if run == r.last {
				r.last = nil
			}
			r.spare = append(r.spare, run)
		} else {
			if p := run.pos; p >= 4096 && 2*p >= len(rc.Time) {
				m := copy(rc.Time, rc.Time[p:])
				copy(rc.G, rc.G[p:])
				copy(rc.Obj, rc.Obj[p:])
				copy(rc.Clock, rc.Clock[p:])
				copy(rc.Site, rc.Site[p:])
				copy(rc.Op, rc.Op[p:])
				rc.Time, rc.G, rc.Obj, rc.Clock, rc.Site, rc.Op = rc.Time[:m], rc.G[:m], rc.Obj[:m], rc.Clock[:m], rc.Site[:m], rc.Op[:m]
				run.pos = 0
			}
			heap.Fix(&r.runs, 0)
		}
		if len(out.Time) == cap(out.Time) {
			return true
		}
	}
	return false
}
