package analyze

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memorder/wafl/plans"
)

// Trace row ops (record.Op; the values are part of the trace format).
const (
	opInit    = 1
	opUse     = 2
	opDispose = 3
	opFork    = 4
)

// Options are the analysis knobs. Zero values take the defaults.
type Options struct {
	// NearMiss is δ, the near-miss window (default 100 ms).
	NearMiss time.Duration
	// Alpha scales the largest gap of a location into its delay (1.25).
	Alpha float64
	// MinDelay and MaxDelay clamp every delay (1 ms, 100 ms).
	MinDelay, MaxDelay time.Duration
	// Params, if non-nil, gives the detection-run parameters (decay, HB
	// factor, caps, grace) written into the plan; the four fields above
	// override its analysis fields when set. Default plans.DefaultParams.
	Params *plans.Params
	// TempDir is where lifecycle events spill when they exceed
	// MemoryBudget (default os.TempDir()).
	TempDir string
	// MemoryBudget bounds the memory of the streaming pair state (beyond
	// it, the exact passes run), of the lifecycle table of the exact
	// passes (beyond it, the table is partitioned by object hash into
	// spill files and the pair pass runs once per group of partitions),
	// and, halved, of the interference log (beyond it, a temporary file).
	// Default 256 MiB.
	MemoryBudget int64
	// Tool is the wafl version written into the plan's provenance.
	Tool string
	// Trace is the trace path written into the plan's provenance (File
	// sets it).
	Trace string
	// BinaryHash is written into the plan's provenance ("sha256:<hex>").
	BinaryHash string
	// RowSpill selects the exact passes and makes pass 1 write a compact
	// copy of the trace's rows to TempDir (32 bytes a row, about the
	// trace's size) that passes 2 and 3 read instead of decoding the trace
	// again. It pays off only when the streaming pass falls back, TempDir
	// is fast (tmpfs) and decoding is slow; on a plain disk the writes
	// cost more than they save.
	RowSpill bool

	noStream       bool          // tests: skip the streaming pair pass
	reorderHorizon time.Duration // tests: reorder horizon, < 0: none
	reorderMax     int           // tests: rows the reorder may hold
	waitKeep       time.Duration // tests: trace time the waiting-use log keeps (default 2δ)
}

func (o Options) params() (plans.Params, error) {
	p := plans.DefaultParams()
	if o.Params != nil {
		p = *o.Params
	}
	if o.NearMiss != 0 {
		p.NearMissNs = int64(o.NearMiss)
	}
	if o.Alpha != 0 {
		p.Alpha = o.Alpha
	}
	if o.MinDelay != 0 {
		p.MinDelayNs = int64(o.MinDelay)
	}
	if o.MaxDelay != 0 {
		p.MaxDelayNs = int64(o.MaxDelay)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("analysis options: %w", err)
	}
	return p, nil
}

// Stats describes one analysis. Pair counts are of dynamic pair instances
// (one per conflicting event pair examined), except Candidates.
type Stats struct {
	Events     int64 // rows read in pass 1, forks included
	Forks      int64 // fork rows
	Lifecycle  int64 // init and dispose rows
	Uses       int64 // use rows
	Goroutines int   // goroutines named by fork edges
	Objects    int64 // objects with at least one init or dispose

	Instances    int64 // pair instances that entered S
	PrunedWindow int64 // instances dropped because τ2 − τ1 ≥ δ
	PrunedSameG  int64 // instances dropped because both ops ran in one goroutine
	PrunedFork   int64 // instances dropped because forks order them

	Candidates   int // distinct candidate pairs {ℓ1, ℓ2} in S
	Locations    int // distinct delay locations ℓ1
	Interference int // (ℓ1, ℓ*) interference entries

	Passes int // passes over the trace or its row spill
	// LogRows are the rows pass 1 kept for pass 3 (thinned, see ilog);
	// LogSpilled says they went to a temporary file.
	LogRows    int64
	LogSpilled bool
	// Streamed: the pairs were found during pass 1 (see streamPairer);
	// otherwise StreamFallback says why the exact pair pass ran.
	Streamed       bool
	StreamFallback string
	RowSpill       bool // passes 2 and 3 read the row spill
	Partitions     int  // object-hash partition groups (1 unless spilled)
	Truncated      bool
	Malformed      int64 // rows skipped: unknown op, site 0 or ≥ 2^30, ragged columns
	Duration       time.Duration
	Warnings       []string

	overwritten int64 // tests: waiting-use log entries overwritten
}

func (s *Stats) warnf(format string, args ...any) {
	s.Warnings = append(s.Warnings, fmt.Sprintf(format, args...))
}

// Run analyzes the trace that open yields (once per pass) and returns the
// plan of the test with the analysis statistics. A trace whose Source
// reports a truncation error is analyzed up to the truncation, with a
// warning; any other Source error fails the analysis.
func Run(ctx context.Context, open Opener, opts Options) (*plans.Plan, *Stats, error) {
	start := time.Now()
	params, err := opts.params()
	if err != nil {
		return nil, nil, err
	}
	budget := opts.MemoryBudget
	if budget <= 0 {
		budget = 256 << 20
	}
	newAnalysis := func() *analysis {
		return &analysis{
			ctx:    ctx,
			open:   open,
			delta:  params.NearMissNs,
			forest: newForest(),
			store:  &lifecycleStore{max: int(max(budget/lcEventCost, 1024)), tempDir: opts.TempDir},
			stats:  &Stats{},
		}
	}
	start1 := func() *analysis {
		a := newAnalysis()
		if !opts.RowSpill {
			a.ilog = newIlog(a.delta, budget/2, opts.TempDir)
		}
		return a
	}
	a := start1()
	defer func() {
		a.store.close()
		if a.ilog != nil {
			a.ilog.close()
		}
		if a.stream != nil {
			a.stream.release()
		}
	}()
	if !opts.RowSpill && !opts.noStream {
		a.stream = newStreamPairer(a.delta, budget)
		a.reorderHorizon = reorderHorizon
		a.reorderMax = int(budget / 4 / 40) // a quarter of the budget at 40 B a row
		if opts.reorderMax > 0 {
			a.reorderMax = opts.reorderMax
		}
		if opts.reorderHorizon != 0 {
			a.reorderHorizon = int64(opts.reorderHorizon) // < 0: off
		}
		if opts.waitKeep > 0 {
			a.stream.keep = int64(opts.waitKeep)
		}
	}
	if opts.RowSpill {
		if a.rows, err = newRowSpill(opts.TempDir); err != nil {
			return nil, nil, err
		}
		defer a.rows.close()
		a.stats.RowSpill = true
	}
	meta, err := a.pass1()
	if err != nil {
		return nil, nil, err
	}
	if reason := a.streamFailed(); reason != "" {
		// The trace breaks an assumption of the streaming pair pass:
		// start over with the exact passes.
		passes := a.stats.Passes
		a.store.close()
		a.ilog.close()
		a.stream.release()
		a = start1()
		a.stats.Passes, a.stats.StreamFallback = passes, reason
		if meta, err = a.pass1(); err != nil {
			return nil, nil, err
		}
	}
	if err := a.forest.build(); err != nil {
		return nil, nil, err
	}
	if st := a.stream; st != nil {
		a.stats.Streamed = true
		a.stats.overwritten = st.overwritten
		a.stats.Partitions = 1
		a.stats.Objects = st.objects()
		a.mergePairer(st.p)
		st.release()
		a.stream = nil
		// The streaming state is the bulk of the heap and garbage now:
		// collect it before pass 3 allocates its windows, so that the
		// heap does not grow to twice their sum.
		runtime.GC()
	} else {
		groups, err := a.store.finish()
		if err != nil {
			return nil, nil, err
		}
		a.stats.Partitions = len(groups)
		pr := newPairer(a.delta, a.forest.f)
		for _, g := range groups {
			ev, err := a.store.load(g)
			if err != nil {
				return nil, nil, err
			}
			a.index = buildIndex(ev)
			a.stats.Objects += int64(a.index.objects())
			a.mask = g
			if err := a.pass2(pr); err != nil {
				return nil, nil, err
			}
			a.index = nil
		}
		a.store.close()
		a.mergePairer(pr)
	}
	plan := a.buildPlan(params, meta, opts)
	if len(plan.Locations) > 0 {
		if err := a.pass3(plan); err != nil {
			return nil, nil, err
		}
	}
	s := a.stats
	s.Goroutines = a.forest.goroutines()
	if a.forest.dupes > 0 {
		s.warnf("%d fork rows name a child that already has a parent or is its own parent; the first edge was kept", a.forest.dupes)
	}
	if s.Malformed > 0 {
		s.warnf("%d malformed rows skipped (unknown op, site 0 or ≥ 2^30, ragged columns)", s.Malformed)
	}
	for _, l := range plan.Locations {
		s.Candidates += len(l.Pairs)
		s.Interference += len(l.Interference)
	}
	s.Locations = len(plan.Locations)
	s.Duration = time.Since(start)
	if err := plan.Validate(); err != nil {
		// A bug in the analyzer, not in the trace: say so plainly.
		return nil, nil, fmt.Errorf("analyze: internal error: produced an invalid plan: %w", err)
	}
	return plan, s, nil
}

type analysis struct {
	ctx    context.Context
	open   Opener
	delta  int64
	forest *forest
	store  *lifecycleStore
	stream *streamPairer // finds the pairs during pass 1; nil: exact pass 2
	// reorderHorizon > 0 puts pass 1's rows back in time order for the
	// streaming pair pass (see reorder).
	reorderHorizon int64
	reorderMax     int          // rows the reorder may hold
	raggedRows     atomic.Int64 // ragged tails dropped by the reorder
	ilog           *ilog        // pass 3's rows, logged in pass 1; nil: pass 3 reads the trace
	rows           *rowSpill    // nil: passes 2 and 3 reopen the source
	index          *objIndex
	mask           uint64               // partitions handled by the current pair pass
	pairs          map[pairKey]*pairAgg // the pairer's, after pass 2
	stats          *Stats
}

type pairSlot struct {
	k pairKey
	p *pairAgg
}

// pairKey is a candidate pair {ℓ1, ℓ2} of one kind.
type pairKey struct {
	first, second uint32
	kind          uint8 // opInit: use-before-init, opUse: use-after-dispose
}

type pairAgg struct {
	count          int64
	minGap, maxGap int64
	obj            uint64
	// windows of ℓ2's goroutines, for the interference pass; a pair has
	// few partner goroutines, so a slice with a hint beats a map.
	ivs  []gWindows
	hint int
}

type gWindows struct {
	g uint64
	l ivList
}

// ivKey is (ℓ1, ℓ2's goroutine): the interference windows of ℓ1 in that
// goroutine.
type ivKey struct {
	first uint32
	g     uint64
}

type ivList struct {
	cur  interval
	done []interval
}

type interval struct{ lo, hi int64 } // closed

// scan runs fn over every batch of a fresh Source and handles the
// Source's end: a truncation becomes a warning (once), other errors fail.
//
// Decoding runs in its own goroutine, one batch ahead: it copies each batch
// into one of a few recycled buffers, so that on two cores decoding and
// analysis overlap.
//
// pre, if not nil, runs on each batch in the decoding goroutine, before fn
// sees it in the caller's.
func (a *analysis) scan(pass string, pre, fn func(c *Columns)) (meta Meta, err error) {
	a.stats.Passes++
	src, err := a.open()
	if err != nil {
		return Meta{}, passError(pass, err)
	}
	meta = src.Meta()
	const inFlight = 3
	full := make(chan *Columns, inFlight)
	free := make(chan *Columns, inFlight)
	for i := 0; i < inFlight; i++ {
		free <- &Columns{}
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	var ro *reorder
	if a.stream != nil && a.reorderHorizon > 0 {
		ro = newReorder(a.reorderHorizon, a.reorderMax)
	}
	go func() {
		defer close(full)
		if ro != nil {
			done <- a.produceReordered(src, ro, pre, full, free, stop)
			return
		}
		for src.Next() {
			var c *Columns
			select {
			case c = <-free:
			case <-stop:
				done <- nil
				return
			}
			copyColumns(c, src.Batch())
			if pre != nil {
				pre(c)
			}
			full <- c
		}
		done <- src.Err()
	}()
	for c := range full {
		if a.ctx.Err() != nil || a.streamFailed() != "" {
			break
		}
		fn(c)
		free <- c
	}
	close(stop)
	for range full {
	}
	srcErr := <-done
	if cerr := src.Close(); cerr != nil && srcErr == nil {
		srcErr = cerr
	}
	if err := a.ctx.Err(); err != nil {
		return meta, err
	}
	if srcErr != nil {
		if !IsTruncated(srcErr) {
			return meta, passError(pass, srcErr)
		}
		if !a.stats.Truncated {
			a.stats.Truncated = true
			a.stats.warnf("trace truncated, analyzed the readable prefix (%d events): %v", a.stats.Events, srcErr)
		}
	}
	return meta, nil
}

// produceReordered is scan's decoding loop when the rows are put back in
// time order for the streaming pair pass (see reorder).
func (a *analysis) produceReordered(src Source, ro *reorder, pre func(*Columns), full, free chan *Columns, stop chan struct{}) error {
	const rows = 64 << 10
	var out *Columns
	// pump releases rows into output batches; false: stopped.
	pump := func(final bool) bool {
		for {
			if out == nil {
				select {
				case out = <-free:
				case <-stop:
					return false
				}
				if cap(out.Time) < rows {
					*out = Columns{
						Time: make([]int64, 0, rows), G: make([]uint64, 0, rows), Clock: make([]uint32, 0, rows),
						Site: make([]uint32, 0, rows), Obj: make([]uint64, 0, rows), Op: make([]uint8, 0, rows),
					}
				}
				out.Time, out.G, out.Clock, out.Site, out.Obj, out.Op = out.Time[:0], out.G[:0], out.Clock[:0], out.Site[:0], out.Obj[:0], out.Op[:0]
			}
			more := ro.drain(out, final)
			if len(out.Time) == cap(out.Time) || !more && final && len(out.Time) > 0 {
				if pre != nil {
					pre(out)
				}
				full <- out
				out = nil
				if more {
					continue
				}
			}
			if !more {
				return true
			}
		}
	}
	for src.Next() {
		b := src.Batch()
		if b.ragged() {
			// keep the row count right for Stats.Malformed: the
			// ragged tail is dropped here, counted below
			a.raggedRows.Add(int64(max(len(b.Time), len(b.G), len(b.Clock), len(b.Site), len(b.Obj), len(b.Op)) - b.Len()))
		}
		ro.add(b)
		if !pump(false) {
			return nil
		}
	}
	if !pump(true) {
		return nil
	}
	if out != nil && len(out.Time) > 0 {
		if pre != nil {
			pre(out)
		}
		full <- out
	}
	return src.Err()
}

// copyColumns copies src into dst, reusing dst's arrays.
func copyColumns(dst, src *Columns) {
	dst.Time = append(dst.Time[:0], src.Time...)
	dst.G = append(dst.G[:0], src.G...)
	dst.Clock = append(dst.Clock[:0], src.Clock...)
	dst.Site = append(dst.Site[:0], src.Site...)
	dst.Obj = append(dst.Obj[:0], src.Obj...)
	dst.Op = append(dst.Op[:0], src.Op...)
}

// rescan runs fn over the rows again for passes 2 and 3: from the row
// spill when there is one, else from a fresh Source.
func (a *analysis) rescan(pass string, fn func(c *Columns)) error {
	if a.rows == nil {
		_, err := a.scan(pass, nil, fn)
		return err
	}
	a.stats.Passes++
	if err := a.rows.scan(func(c *Columns) {
		if a.ctx.Err() == nil {
			fn(c)
		}
	}); err != nil {
		return passError(pass, err)
	}
	return a.ctx.Err()
}

// pass1 reads the fork edges and the lifecycle events.
func (a *analysis) pass1() (Meta, error) {
	var serr error
	var pre func(c *Columns)
	if a.ilog != nil {
		pre = a.ilog.batch
	}
	meta, err := a.scan("pass 1 (forks, lifecycle)", pre, func(c *Columns) {
		if serr != nil {
			return
		}
		if a.stream != nil {
			a.stream.batch(c)
		}
		n := c.Len()
		if c.ragged() {
			a.stats.Malformed += int64(max(len(c.Time), len(c.G), len(c.Clock), len(c.Site), len(c.Obj), len(c.Op)) - n)
		}
		a.stats.Events += int64(n)
		ops := c.Op[:n]
		for i, op := range ops {
			switch op {
			case opUse, opInit, opDispose:
				if site := c.Site[i]; site == 0 || site > maxSite {
					a.stats.Malformed++
					continue
				}
				if a.rows != nil {
					if err := a.rows.add(c, i); err != nil {
						serr = err
						return
					}
				}
				if op == opUse {
					a.stats.Uses++
					continue
				}
				a.stats.Lifecycle++
				if a.stream != nil {
					continue
				}
				if err := a.store.add(lcEvent{obj: c.Obj[i], time: c.Time[i], g: c.G[i], clock: c.Clock[i], site: c.Site[i], op: op}); err != nil {
					serr = err
					return
				}
			case opFork:
				a.stats.Forks++
				a.forest.add(c.G[i], c.Obj[i], c.Clock[i])
			default:
				a.stats.Malformed++
			}
		}
	})
	a.stats.Malformed += a.raggedRows.Load()
	if err == nil {
		err = serr
	}
	if err == nil && a.rows != nil {
		err = a.rows.flush()
	}
	if err == nil && a.ilog != nil {
		err = a.ilog.finish()
		a.stats.LogRows, a.stats.LogSpilled = a.ilog.rows, a.ilog.spilled()
	}
	return meta, err
}

// streamFailed returns why the streaming pair pass gave up, or "".
func (a *analysis) streamFailed() string {
	if a.stream == nil {
		return ""
	}
	return a.stream.why()
}

// inWindow reports whether 0 ≤ t2 − t1 < delta without overflow.
func inWindow(t1, t2, delta int64) bool {
	return t2 >= t1 && uint64(t2)-uint64(t1) < uint64(delta)
}

// add merges iv into the current interval when they overlap, and
// otherwise retires the current one.
func (l *ivList) add(iv interval) {
	if iv.lo <= l.cur.hi && iv.hi >= l.cur.lo {
		l.cur.lo = min(l.cur.lo, iv.lo)
		l.cur.hi = max(l.cur.hi, iv.hi)
		return
	}
	l.done = append(l.done, l.cur)
	l.cur = iv
}

// buildPlan turns the pair aggregates into plan locations.
func (a *analysis) buildPlan(params plans.Params, meta Meta, opts Options) *plans.Plan {
	p := &plans.Plan{
		Version: plans.Version,
		Params:  params,
		Provenance: plans.Provenance{
			Package:    meta.Package,
			Test:       meta.Test,
			Trace:      opts.Trace,
			Binary:     meta.Binary,
			BinaryHash: opts.BinaryHash,
			Sites:      meta.Sites,
			Events:     a.stats.Events,
			Created:    time.Now().UTC().Format(time.RFC3339),
			Tool:       opts.Tool,
			Truncated:  a.stats.Truncated,
		},
	}
	keys := make([]pairKey, 0, len(a.pairs))
	for k := range a.pairs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y pairKey) int {
		if x.first != y.first {
			return cmp32(x.first, y.first)
		}
		if x.second != y.second {
			return cmp32(x.second, y.second)
		}
		return strings.Compare(string(kindOf(x.kind)), string(kindOf(y.kind)))
	})
	for _, k := range keys {
		agg := a.pairs[k]
		if len(p.Locations) == 0 || p.Locations[len(p.Locations)-1].Site != k.first {
			p.Locations = append(p.Locations, plans.Location{Site: k.first, Prob: 1})
		}
		l := &p.Locations[len(p.Locations)-1]
		l.Pairs = append(l.Pairs, plans.Pair{
			Kind:     kindOf(k.kind),
			First:    k.first,
			Second:   k.second,
			Object:   agg.obj,
			Count:    int(min(agg.count, math.MaxInt32)),
			MinGapNs: agg.minGap,
			MaxGapNs: agg.maxGap,
		})
	}
	p.Recompute()
	return p
}

func kindOf(op uint8) plans.Kind {
	if op == opInit {
		return plans.UseBeforeInit
	}
	return plans.UseAfterDispose
}

func cmp32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
