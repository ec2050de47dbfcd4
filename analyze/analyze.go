package analyze

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/plans"
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
	// NoForkOrder keeps pairs that fork edges order (parent-child
	// pruning off): an ablation for the thesis's Table 6.4.
	NoForkOrder bool
	// Tool is the wafl version written into the plan's provenance.
	Tool string
	// Trace is the trace path written into the plan's provenance (File
	// sets it).
	Trace string
	// BinaryHash is written into the plan's provenance ("sha256:<hex>").
	BinaryHash string
	// RowSpill selects the exact passes and makes pass 1 write a copy of
	// the trace's sited rows to TempDir (raw spill records,
	// abi.RawRecordSize bytes a row) that passes 2 and 3 read instead of
	// decoding the trace again. It pays off only when the streaming pass
	// falls back, TempDir is fast (tmpfs) and decoding is slow; on a plain
	// disk the writes cost more than they save.
	RowSpill bool
	// SlotTypes maps site ids to the static types of their slots (the
	// site table's "type"); pairs of two sites of different types are
	// dropped as address reuse (slottypes.go). Nil keeps every pair.
	SlotTypes map[uint32]string
	// Sites describes the site table's sites for predicted partners
	// (predict.go) and static pairs (static.go): nil predicts nothing.
	Sites map[uint32]SiteInfo
	// Reach says which sites the test and the goroutines of its go
	// statements may reach (internal/reach): static pairs come from it,
	// and predicted partners are scoped to the sites the test may reach.
	// Nil: no static pairs, predicted partners from the whole site table.
	Reach Reacher
	// Known, if not nil, names the pairs of the plan this analysis will
	// extend (a detection run that also recorded): static pairs leave
	// them out of their ranking, so that those the plan's analysis left
	// below the cap come in.
	Known func(first, second uint32) bool
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
	Events int64 // rows read in pass 1, forks included
	// Thinned counts the use rows the recorder left out (abi.OpThinned:
	// repeated uses of a slot at a site by a goroutine within about a
	// millisecond), in ThinnedRows rows.
	Thinned, ThinnedRows int64
	Forks                int64 // fork rows
	Gos                  int64 // go rows (go statements executed)
	// Unstarted are the go rows with no fork row of the same parent and
	// counter: goroutines that never ran before the trace ended.
	Unstarted int
	// Late are the goroutines that never ran or reached no access before
	// the trace ended: Unstarted and the children of fork rows without a
	// row of their own.
	Late       int
	Lifecycle  int64 // init and dispose rows
	Uses       int64 // use rows
	Checks     int64 // check rows (checkact.go)
	Goroutines int   // goroutines named by fork edges
	Objects    int64 // objects with at least one init or dispose

	Instances    int64 // pair instances that entered S
	PrunedWindow int64 // instances dropped because τ2 − τ1 ≥ δ
	PrunedSameG  int64 // instances dropped because both ops ran in one goroutine
	PrunedFork   int64 // instances dropped because forks order them
	PrunedAtomic int64 // check-then-act instances dropped: check and act in one critical section the other check takes too
	PrunedType   int   // candidate pairs dropped because their slot types differ (address reuse)
	Predicted    int   // candidate pairs predicted for late goroutines (predict.go)
	Static       int   // static candidate pairs of late goroutines (static.go)
	StaticLeft   int   // static candidate pairs beyond the cap, left out
	Mirrored     int   // check-then-act pairs mirrored from an observed pair of two check sites (checkact.go)

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
}

func (s *Stats) warnf(format string, args ...any) {
	s.Warnings = append(s.Warnings, fmt.Sprintf(format, args...))
}

// tuning holds the knobs of an analysis that only tests turn, and what
// they read back.
type tuning struct {
	noStream       bool          // start with the exact passes
	reorderHorizon time.Duration // 0: reorderHorizon; < 0: no reordering
	reorderMax     int           // rows the reordering may hold; 0: a quarter of the budget
	waitKeep       time.Duration // trace time the waiting-use log keeps; 0: 2δ
	overwritten    int64         // set by run: waiting-use log entries overwritten
}

// Run analyzes the trace that open yields (once per pass) and returns the
// plan of the test with the analysis statistics. It streams, and starts
// over with the exact passes when the trace's order defeats streaming
// (Stats.StreamFallback says why); Options.RowSpill selects the exact
// passes over a row spill. A trace whose Source reports a truncation
// error is analyzed up to the truncation, with a warning; any other
// Source error fails the analysis.
func Run(ctx context.Context, open Opener, opts Options) (*plans.Plan, *Stats, error) {
	return run(ctx, open, opts, &tuning{})
}

// run is Run with the knobs of tests.
func run(ctx context.Context, open Opener, opts Options, tune *tuning) (plan *plans.Plan, stats *Stats, err error) {
	defer func() {
		if r := recover(); r != nil {
			plan, stats, err = nil, nil, internalError(r)
		}
	}()
	start := time.Now()
	params, err := opts.params()
	if err != nil {
		return nil, nil, err
	}
	a := newAnalysis(ctx, open, params.NearMissNs, opts, tune)
	s, err := a.strategy(opts)
	if err != nil {
		return nil, nil, err
	}
	defer func() { s.close() }()
	meta, err := a.pass1(s)
	var why gaveUp
	if errors.As(err, &why) {
		// The trace breaks an assumption of the streaming pass: start
		// over with the exact passes.
		s.close()
		a.restart(string(why))
		s = newExact(a)
		meta, err = a.pass1(s)
	}
	if err != nil {
		return nil, nil, err
	}
	plan, err = a.finish(s, params, meta, opts)
	if err != nil {
		return nil, nil, err
	}
	a.stats.Duration = time.Since(start)
	return plan, a.stats, nil
}

// analysis is the computation of Run, whatever its strategy: pass 1 counts
// the rows and collects the fork edges while the strategy takes what it
// needs of them; then the strategy finds the pairs, and pass 3 the
// interference sets in the rows the strategy kept.
type analysis struct {
	ctx     context.Context
	open    Opener
	delta   int64
	noFork  bool  // Options.NoForkOrder
	budget  int64 // Options.MemoryBudget or its default
	tempDir string
	tune    *tuning
	forest  *forest
	pairs   map[pairKey]*pairAgg // found by the strategy
	wins    *winTable            // their interference windows (nil: in pairs)
	checks  *checkRows           // check and dispose rows (checkact.go)
	late    *lateTracker         // fork rows and goroutines that ran (predict.go; nil: off)
	predict bool                 // Options.Sites given
	static  bool                 // and Options.Reach: static pairs (static.go)
	stats   *Stats
}

func newAnalysis(ctx context.Context, open Opener, delta int64, opts Options, tune *tuning) *analysis {
	budget := opts.MemoryBudget
	if budget <= 0 {
		budget = 256 << 20
	}
	a := &analysis{
		ctx: ctx, open: open, delta: delta, noFork: opts.NoForkOrder, budget: budget, tempDir: opts.TempDir, tune: tune,
		forest: newForest(), stats: &Stats{}, predict: len(opts.Sites) > 0,
	}
	a.static = a.predict && opts.Reach != nil
	a.checks = a.newCheckRows()
	a.late = newLateTracker(a.static)
	return a
}

// newCheckRows makes the store of check and dispose rows (and init rows
// for static pairs).
func (a *analysis) newCheckRows() *checkRows {
	r := newCheckRows(a.budget)
	r.keepInits = a.static
	return r
}

// strategy returns the strategy to start with: streaming, unless the
// options ask for the row spill (or a test for the exact passes).
func (a *analysis) strategy(opts Options) (strategy, error) {
	switch {
	case opts.RowSpill:
		return newExactRows(a)
	case a.tune.noStream:
		return newExact(a), nil
	}
	return newStreaming(a), nil
}

// restart forgets pass 1 after the streaming strategy gave up, keeping
// the count of passes and why.
func (a *analysis) restart(why string) {
	a.forest = newForest()
	a.checks = a.newCheckRows()
	a.late = newLateTracker(a.static)
	a.pairs, a.wins = nil, nil
	a.stats = &Stats{Passes: a.stats.Passes, StreamFallback: why}
}

// pass1 reads the trace: the analysis counts the rows and collects the
// fork edges and check rows, the strategy takes what it needs of them.
// The counting runs in the decoding goroutine, with the strategy's own
// decoding work, so that the strategy's batch (the pair pass, the
// critical path on two cores) has its goroutine to itself.
func (a *analysis) pass1(s strategy) (Meta, error) {
	ro, pre := s.decode()
	return a.scan("pass 1 (forks, lifecycle)", ro, func(c *trace.Batch) {
		a.count(c)
		a.checks.batch(c)
		if pre != nil {
			pre(c)
		}
	}, s.batch)
}

// count counts the rows of a batch of pass 1 and collects its fork edges.
// Columnar: one branch-free pass histograms the ops and the rows with an
// invalid site per op; fork and go rows, rare, are visited again only in
// a batch that has them.
func (a *analysis) count(c *trace.Batch) {
	n := c.Len()
	a.stats.Malformed += raggedRows(c)
	a.stats.Events += int64(n)
	var hist, bad [256]int64
	sites := c.Site[:n]
	for i, op := range c.Op[:n] {
		hist[op]++
		if !validSite(sites[i]) {
			bad[op]++
		}
	}
	forkGo := hist[abi.OpFork]+hist[abi.OpGo] > 0
	a.late.rows(c, forkGo)
	st := a.stats
	for op := range hist {
		k := hist[op]
		if k == 0 {
			continue
		}
		b := bad[op]
		switch abi.Op(op) {
		case abi.OpUse:
			st.Uses += k - b
			st.Malformed += b
		case abi.OpInit, abi.OpDispose:
			st.Lifecycle += k - b
			st.Malformed += b
		case abi.OpCheck:
			st.Checks += k - b
			st.Malformed += b
		case abi.OpGo:
			st.Gos += k - b
			st.Malformed += b
		case abi.OpFork:
			st.Forks += k
		case abi.OpThinned:
			st.ThinnedRows += k
		default:
			st.Malformed += k
		}
	}
	if hist[abi.OpThinned] > 0 {
		for i, op := range c.Op[:n] {
			if abi.Op(op) == abi.OpThinned {
				st.Thinned += int64(c.Obj[i])
			}
		}
	}
	if hist[abi.OpFork] > 0 {
		gs, objs, cl := c.G[:n], c.Obj[:n], c.Clock[:n]
		for i, op := range c.Op[:n] {
			if abi.Op(op) == abi.OpFork {
				a.forest.add(gs[i], objs[i], cl[i])
			}
		}
	}
}

// validSite reports whether the site of an init, use or dispose row is
// well-formed; rows with other sites are skipped as malformed.
func validSite(site uint32) bool { return site != 0 && site <= abi.MaxSite }

// raggedRows is the number of rows of c beyond its shortest column,
// skipped as malformed.
func raggedRows(c *trace.Batch) int64 {
	return int64(max(len(c.Time), len(c.G), len(c.Clock), len(c.Site), len(c.Obj), len(c.Op)) - c.Len())
}

// finish turns what pass 1 gathered into the plan: the fork forest, the
// strategy's pairs, the plan's locations and their interference sets, and
// the counters.
func (a *analysis) finish(s strategy, params plans.Params, meta Meta, opts Options) (*plans.Plan, error) {
	if err := a.forest.build(); err != nil {
		return nil, err
	}
	if err := s.pairs(a); err != nil {
		return nil, err
	}
	a.stats.PrunedType = a.dropAliased(opts.SlotTypes)
	a.stats.Unstarted = a.late.unstarted()
	a.stats.Late = a.late.lateCount()
	if a.predict {
		lates := a.late.lates(a.static)
		var scope map[uint32]int
		if a.static {
			r := &cachedReach{r: opts.Reach}
			a.stats.Static, a.stats.StaticLeft = a.staticPairs(opts.Sites, lates, r, opts.Known)
			scope = r.Test(meta.Test)
			// A goroutine whose go statement's reach is known has its
			// static pairs; predicted partners are for the others.
			lates = slices.DeleteFunc(lates, func(lg lateG) bool {
				return lg.site != 0 && r.Go(lg.site) != nil
			})
		}
		a.stats.Predicted = a.predictPairs(opts.Sites, lates, scope)
	}
	a.late = nil
	a.checkPairs(opts.Sites)
	plan := a.buildPlan(params, meta, opts)
	if len(plan.Locations) > 0 {
		if err := a.pass3(plan, s); err != nil {
			return nil, err
		}
	}
	st := a.stats
	st.Goroutines = a.forest.goroutines()
	if a.forest.dupes > 0 {
		st.warnf("%d fork rows name a child that already has a parent or is its own parent; the first edge was kept", a.forest.dupes)
	}
	if st.Malformed > 0 {
		st.warnf("%d malformed rows skipped (unknown op, site 0 or ≥ 2^30, ragged columns)", st.Malformed)
	}
	for _, l := range plan.Locations {
		st.Candidates += len(l.Pairs)
		st.Interference += len(l.Interference)
	}
	st.Locations = len(plan.Locations)
	if err := plan.Validate(); err != nil {
		// A bug in the analyzer, not in the trace: say so plainly.
		return nil, fmt.Errorf("analyze: internal error: produced an invalid plan: %w", err)
	}
	return plan, nil
}

// scan runs fn over every batch of a fresh Source, until fn fails, and
// handles the Source's end: a truncation becomes a warning (once), other
// errors fail. An error of fn is returned as it is.
//
// Decoding runs in its own goroutine, one batch ahead: it copies each batch
// into one of a few recycled buffers, so that on two cores decoding and
// analysis overlap. There ro, if not nil, puts the rows back in time
// order, and pre, if not nil, runs on each batch before fn sees it in the
// caller's goroutine.
func (a *analysis) scan(pass string, ro *reorder, pre func(*trace.Batch), fn func(*trace.Batch) error) (meta Meta, err error) {
	a.stats.Passes++
	src, err := a.open()
	if err != nil {
		return Meta{}, passError(pass, err)
	}
	meta = src.Meta()
	const inFlight = 3
	full := make(chan *trace.Batch, inFlight)
	free := make(chan *trace.Batch, inFlight)
	for i := 0; i < inFlight; i++ {
		free <- &trace.Batch{}
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	var ragged int64 // rows the reordering dropped from ragged batches
	go func() {
		defer close(full)
		defer func() {
			if r := recover(); r != nil {
				done <- internalError(r)
			}
		}()
		if ro != nil {
			done <- produceReordered(src, ro, pre, full, free, stop, &ragged)
			return
		}
		for src.Next() {
			var c *trace.Batch
			select {
			case c = <-free:
			case <-stop:
				done <- nil
				return
			}
			c.CopyFrom(src.Batch())
			if pre != nil {
				pre(c)
			}
			full <- c
		}
		done <- src.Err()
	}()
	var fnErr error
	for c := range full {
		if a.ctx.Err() != nil {
			break
		}
		if fnErr = fn(c); fnErr != nil {
			break
		}
		free <- c
	}
	close(stop)
	for range full {
	}
	srcErr := <-done
	a.stats.Malformed += ragged
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
	return meta, fnErr
}

// produceReordered is scan's decoding loop when the rows are put back in
// time order (see reorder). The reordering takes the complete rows of a
// ragged batch; the others are added to *ragged.
func produceReordered(src Source, ro *reorder, pre func(*trace.Batch), full, free chan *trace.Batch, stop chan struct{}, ragged *int64) error {
	// Output batches of up to 64Ki rows, but no larger than the largest
	// input batch so far (rounded up to a power of two, at least 1Ki): a
	// short test's trace is one small batch.
	const maxRows = 64 << 10
	rows := 1 << 10
	var out *trace.Batch
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
					*out = trace.Batch{
						Time: make([]int64, 0, rows), G: make([]uint64, 0, rows), Clock: make([]uint32, 0, rows),
						Site: make([]uint32, 0, rows), Obj: make([]uint64, 0, rows), Op: make([]uint8, 0, rows),
					}
				}
				out.Reset()
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
		for rows < maxRows && rows < b.Len() {
			rows <<= 1
		}
		*ragged += raggedRows(b)
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

// rescan runs fn over the batches of a fresh Source, for a pass after
// pass 1.
func (a *analysis) rescan(pass string, fn func(*trace.Batch)) error {
	_, err := a.scan(pass, nil, nil, func(c *trace.Batch) error {
		fn(c)
		return nil
	})
	return err
}

// finishLog ends pass 1's interference log.
func (a *analysis) finishLog(l *ilog) error {
	err := l.finish()
	a.stats.LogRows, a.stats.LogSpilled = l.rows, l.spilled()
	return err
}

// mergePairer moves the pairer's aggregates and counters into a.
func (a *analysis) mergePairer(p *pairer) {
	a.stats.Instances += p.instances
	a.stats.PrunedWindow += p.prunedWindow
	a.stats.PrunedSameG += p.prunedSameG
	a.stats.PrunedFork += p.prunedFork
	a.pairs, p.pairs = p.pairs, nil
	if p.wins != nil {
		if a.wins == nil {
			a.wins = p.wins
		} else {
			a.wins.merge(p.wins)
		}
		p.wins = nil
	}
}

// buildPlan turns the pair aggregates into a plan (plans.New).
func (a *analysis) buildPlan(params plans.Params, meta Meta, opts Options) *plans.Plan {
	prov := plans.Provenance{
		Package:    meta.Package,
		Test:       meta.Test,
		Trace:      opts.Trace,
		Binary:     meta.Binary,
		BinaryHash: opts.BinaryHash,
		Sites:      meta.Sites,
		Events:     a.stats.Events,
		Thinned:    a.stats.Thinned,
		Created:    time.Now().UTC().Format(time.RFC3339),
		Tool:       opts.Tool,
		Truncated:  a.stats.Truncated,
	}
	pairs := make([]plans.Pair, 0, len(a.pairs))
	for k, agg := range a.pairs {
		pairs = append(pairs, plans.Pair{
			Kind:     kindOf(k.kind),
			First:    k.first,
			Second:   k.second,
			Object:   agg.obj,
			Count:    int(min(agg.count, math.MaxInt32)),
			MinGapNs: agg.minGap,
			MaxGapNs: agg.maxGap,
			From:     fromOf(agg),
		})
	}
	return plans.New(params, prov, pairs)
}

// fromOf is the origin a pair of this analysis gets: static, predicted,
// or the trace's (empty).
func fromOf(agg *pairAgg) string {
	switch {
	case agg.static:
		return plans.FromStatic
	case agg.predicted:
		return plans.FromPredicted
	case agg.mirror:
		return plans.FromMirror
	}
	return ""
}

func kindOf(op abi.Op) plans.Kind {
	switch op {
	case abi.OpInit:
		return plans.UseBeforeInit
	case abi.OpCheck:
		return plans.CheckThenAct
	}
	return plans.UseAfterDispose
}
