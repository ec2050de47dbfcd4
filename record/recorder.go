package record

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/lcc"
)

// Recorder tuning. A buffer holds bufEvents events of one shard; shards are
// chosen by goroutine id, so one goroutine's events stay in one shard and,
// buffer after buffer, in program order.
const (
	numShards     = 64
	bufEvents     = 2048
	flushInterval = 25 * time.Millisecond
)

// maxPending bounds the buffers waiting for the writer; beyond it
// goroutines that fill a buffer wait for the writer (backpressure) instead
// of growing memory without bound. A variable so that tests can lower it.
var maxPending int32 = 512

// A buffer's state word packs the owning shard (bits 48..63, 0: none), a
// sealed flag (bit 40) and the number of reserved slots (bits 0..31). An
// event reserves a slot by CAS only while the buffer is owned by its shard,
// unsealed and not full, so a goroutine holding a stale pointer to a buffer
// that was meanwhile written and recycled can never reserve in it.
const (
	ownerShift = 48
	sealedBit  = 1 << 40
	countMask  = 1<<32 - 1
)

// A buffer holds its events as abi.RawEvent, whose memory layout is the
// spill file's record layout, so that a full buffer is written with one
// copy (abi.AppendRawEvents).
type buffer struct {
	state atomic.Uint64
	done  atomic.Uint32 // slots whose event is written
	count uint32        // slots reserved when sealed; set by the sealer
	ev    [bufEvents]abi.RawEvent
}

type shard struct {
	cur     atomic.Pointer[buffer]
	mu      sync.Mutex   // held to swap cur
	thinned atomic.Int64 // use rows thinning left out, not yet in a thinned row
	_       [64 - 24]byte
}

// Thinning: a use of the same slot at the same site by the same goroutine
// as a use the recorder wrote in the same aligned interval of
// 1<<abi.ThinShift ns is left out and counted (a hot loop over one object
// writes one row a millisecond, not millions). thin holds, per hash of
// (goroutine, site, slot), the hash's top bits and the interval of the
// last row written: one atomic load and compare per use, a store when the
// row is kept. A collision of two keys in a slot only keeps more rows.
const (
	thinBits  = 12
	thinSlots = 1 << thinBits
	thinTime  = 1<<24 - 1 // the interval's bits in a slot
)

// thinning is on unless the hook turns it off (abi.EnvThin) before Start.
var thinning = true

// NoThinning makes the next Start record every use row.
func NoThinning() { thinning = false }

type recorder struct {
	shards [numShards]shard
	path   string
	thin   *[thinSlots]atomic.Uint64 // nil: thinning off
	marked atomic.Bool               // Mark was called: thinned rows go before the marks

	mu      sync.Mutex // guards queue, free, closed, writing, armed
	queue   []*buffer  // sealed buffers in hand-off order
	free    []*buffer
	closed  bool
	writing bool // a writer goroutine is running or about to
	armed   bool // the flush timer is set
	timer   *time.Timer
	pending atomic.Int32 // len(queue), readable without mu

	once sync.Once // Stop

	// wmu serializes writers: the queue is taken and written under it, so
	// buffers reach the file in queue order. It guards the fields below.
	wmu        sync.Mutex
	f          *os.File
	w          *bufio.Writer
	scratch    []byte
	err        error // first write error; later events are dropped
	fileClosed bool
	events     atomic.Int64 // events written to the file
	dropped    atomic.Int64 // events lost to write errors
}

// active is the recorder of the current recording, if any.
var active atomic.Pointer[recorder]

// Start creates (truncating) the spill file at path and starts recording:
// Add and AddFork append events from now on until Stop. Package hook calls
// it from its init when WAFL_MODE=record.
func Start(path string) error {
	if r := active.Load(); r != nil && !r.isClosed() {
		return fmt.Errorf("recording to %s already in progress", r.path)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating spill file: %w", err)
	}
	r := &recorder{
		path:    path,
		f:       f,
		w:       bufio.NewWriterSize(f, 1<<20),
		scratch: make([]byte, 0, abi.RawFrameSize+bufEvents*abi.RawRecordSize),
	}
	if thinning {
		r.thin = new([thinSlots]atomic.Uint64)
	}
	r.timer = time.AfterFunc(time.Hour, r.tick)
	r.timer.Stop()
	if _, err := r.f.Write(abi.AppendRawHeader(nil)); err != nil {
		f.Close()
		return fmt.Errorf("writing spill file %s: %w", path, err)
	}
	active.Store(r)
	return nil
}

// Stop flushes every recorded event to the spill file and closes it;
// later events are dropped. It returns the first write error. It is
// idempotent and safe to call from any goroutine: calls after the first
// wait for it and return the same result. Without a recording it does
// nothing.
func Stop() error {
	r := active.Load()
	if r == nil {
		return nil
	}
	r.once.Do(r.stop)
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return r.err
}

// Add records an access (init, use or dispose) by the calling goroutine:
// its id and own clock (lcc.Current), the time (nanotime), site, the object's
// address and op. It is the recorder's fast path: one out-of-line call
// that reserves a slot in the current buffer of the goroutine's shard with
// one compare-and-swap, fills it and publishes it; everything else (no
// buffer, full, sealed, not recording) goes through add. Without a
// recording the event is dropped. A use that thinning leaves out (above)
// is only counted.
func Add(site uint32, obj unsafe.Pointer, op abi.Op) {
	r := active.Load()
	if r == nil {
		return
	}
	g, c := lcc.Current()
	t := nanotime()
	si := g % numShards
	if op == abi.OpUse && r.thin != nil {
		h := g*0x9E3779B97F4A7C15 ^ uint64(site)*0xC2B2AE3D27D4EB4F ^ uint64(uintptr(obj))*0x165667B19E3779F9
		h ^= h >> 31
		v := h&^thinTime | 1<<63 | uint64(t)>>abi.ThinShift&thinTime
		slot := &r.thin[h&(thinSlots-1)]
		if slot.Load() == v {
			r.shards[si].thinned.Add(1)
			return
		}
		slot.Store(v)
	}
	// add's first attempt, written out here so that an event costs one
	// call; the two must reserve and publish slots the same way.
	if b := r.shards[si].cur.Load(); b != nil {
		s := b.state.Load()
		if s&^countMask == (si+1)<<ownerShift && s&countMask < bufEvents && b.state.CompareAndSwap(s, s+1) {
			e := &b.ev[s&countMask]
			e.Time = t
			e.G = g
			e.Obj = uint64(uintptr(obj))
			e.Clock = c
			e.Site = site
			e.Op = op
			b.done.Add(1)
			return
		}
	}
	r.add(g, t, g, uint64(uintptr(obj)), c, site, op)
}

// AddFork records the fork row of edge e (g = parent, clock = the
// parent's counter at the fork, obj = child, site 0). The child calls it
// when it adopts, so the row goes to the child's shard and precedes the
// child's own events in the file.
func AddFork(e lcc.Edge) {
	if r := active.Load(); r != nil {
		r.add(e.Child, nanotime(), e.Parent, e.Child, e.Clock, 0, abi.OpFork)
	}
}

// AddGo records the go row of a go statement at site that the calling
// goroutine (the parent) executes with token t (g = parent, clock = the
// parent's counter at the fork, the clock the child's fork row carries;
// obj 0). It is written in the parent's shard when the go statement runs,
// so a child that never runs before the recording ends is still known.
func AddGo(site uint32, t lcc.Token) {
	if r := active.Load(); r != nil {
		r.add(t.Parent, nanotime(), t.Parent, 0, t.Clock, site, abi.OpGo)
	}
}

// Mark records a test boundary mark of the calling goroutine
// (abi.OpTestBegin or abi.OpTestEnd) for the test with id; site is the
// mark's argument (1: the test failed). A mark is flushed at once, with
// every buffered event: when a run crashes later, a test whose end mark
// is in the spill file has all its events up to its end there too, and
// the test that was running has its begin mark there.
// Called once per test, not on the events' path: it may lock and write.
func Mark(op abi.Op, id uint64, site uint32) {
	r := active.Load()
	if r == nil {
		return
	}
	g, c := lcc.Current()
	r.marked.Store(true)
	r.addThinned(g, c)
	r.add(g, nanotime(), g, id, c, site, op)
	r.sealAll()
	r.wmu.Lock()
	r.drainLocked(false)
	r.wmu.Unlock()
}

// Subtest records that the calling goroutine starts running the subtest
// with id (abi.OpSubtest). Unlike Mark it does not flush: a test may run
// thousands of subtests.
func Subtest(id uint64) {
	r := active.Load()
	if r == nil {
		return
	}
	g, c := lcc.Current()
	r.add(g, nanotime(), g, id, c, 0, abi.OpSubtest)
}

func (r *recorder) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// add appends one event to the shard of goroutine key, the goroutine
// calling add: its own events, or the fork row it writes when it adopts,
// so that a goroutine's fork row precedes its events in the file. Add
// inlines the first attempt of the loop below; the two must reserve and
// publish slots the same way.
func (r *recorder) add(key uint64, t int64, g, obj uint64, clock, site uint32, op abi.Op) {
	si := key % numShards
	sh := &r.shards[si]
	owner := (si + 1) << ownerShift
	for {
		if b := sh.cur.Load(); b != nil {
			for {
				s := b.state.Load()
				if s&^countMask != owner || s&countMask >= bufEvents {
					break
				}
				if b.state.CompareAndSwap(s, s+1) {
					b.ev[s&countMask] = abi.RawEvent{Time: t, G: g, Obj: obj, Clock: clock, Site: site, Op: op}
					b.done.Add(1)
					return
				}
			}
			if !r.swap(sh, si, b) {
				return
			}
			continue
		}
		if !r.swap(sh, si, nil) {
			return
		}
	}
}

// swap replaces the shard's current buffer old (full, or nil) with a fresh
// one, handing old to the writer. It returns false once the recorder is
// closed: the event is dropped.
//
//go:noinline
func (r *recorder) swap(sh *shard, si uint64, old *buffer) bool {
	sh.mu.Lock()
	if sh.cur.Load() == old {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			sh.mu.Unlock()
			return false
		}
		if old != nil {
			r.sealLocked(old)
			r.startWriterLocked()
		}
		r.armLocked()
		b := r.newBufferLocked()
		r.mu.Unlock()
		b.state.Store((si + 1) << ownerShift)
		sh.cur.Store(b)
	}
	sh.mu.Unlock()
	// Backpressure: let the writer catch up rather than buffer without
	// bound. Only goroutines that fill buffers wait here.
	for r.pending.Load() > maxPending {
		r.mu.Lock()
		closed := r.closed
		r.mu.Unlock()
		if closed {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
	return true
}

// sealLocked closes b to new events and queues it for the writer. The
// caller holds the shard's lock and r.mu.
func (r *recorder) sealLocked(b *buffer) {
	s := b.state.Or(sealedBit)
	b.count = uint32(s & countMask)
	r.queue = append(r.queue, b)
	r.pending.Store(int32(len(r.queue)))
}

func (r *recorder) newBufferLocked() *buffer {
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free = r.free[:n-1]
		return b
	}
	return new(buffer)
}

// sealAll hands every shard's partly filled buffer to the writer and
// leaves the shard empty, so that its next event takes the slow path (and
// re-arms the flush timer). It reports whether any buffer was sealed.
func (r *recorder) sealAll() (sealed bool) {
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		if b := sh.cur.Load(); b != nil {
			r.mu.Lock()
			r.sealLocked(b)
			r.mu.Unlock()
			sh.cur.Store(nil)
			sealed = true
		}
		sh.mu.Unlock()
	}
	return sealed
}

// There is no permanent background goroutine, so that goroutine-leak
// checks in the tests under study (goleak) see nothing of wafl once the
// test's own goroutines are gone: a writer goroutine runs only while
// buffers are queued, and a timer seals partly filled buffers every
// flushInterval only while events keep arriving.

// startWriterLocked starts a writer goroutine unless one is running. The
// caller holds r.mu.
func (r *recorder) startWriterLocked() {
	if !r.writing {
		r.writing = true
		go r.writer()
	}
}

// armLocked sets the flush timer unless it is set. The caller holds r.mu.
func (r *recorder) armLocked() {
	if !r.armed && !r.closed {
		r.armed = true
		r.timer.Reset(flushInterval)
	}
}

// writer writes queued buffers until the queue is empty.
func (r *recorder) writer() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.drainLocked(true)
}

// tick runs flushInterval after events arrived: it seals the partly
// filled buffers so that a crash loses at most that much, and writes them.
// The next event re-arms the timer; an idle recorder has no timer.
func (r *recorder) tick() {
	r.mu.Lock()
	r.armed = false
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return
	}
	if r.sealAll() {
		r.mu.Lock()
		r.startWriterLocked()
		r.mu.Unlock()
	}
}

// addThinned writes a thinned row for goroutine g at clock c with the
// uses left out since the last one, if any.
func (r *recorder) addThinned(g uint64, c uint32) {
	var n int64
	for i := range r.shards {
		n += r.shards[i].thinned.Swap(0)
	}
	if n > 0 {
		r.add(g, nanotime(), g, uint64(n), c, 0, abi.OpThinned)
	}
}

// stop closes the recorder: later events are dropped, everything sealed
// is written, and the file is closed.
func (r *recorder) stop() {
	if !r.marked.Load() {
		// Without test marks the file is one run's: the count goes at
		// its end. With marks, each test's count went before its end
		// mark, and a row here would be the epilogue's, which wafl copies
		// into every test's trace: what was thinned after the last test
		// is not counted.
		g, c := lcc.Current()
		r.addThinned(g, c)
	}
	r.mu.Lock()
	r.closed = true
	r.armed = false
	r.mu.Unlock()
	r.timer.Stop()
	r.sealAll()
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.drainLocked(false)
	if !r.fileClosed {
		r.fileClosed = true
		if err := r.f.Close(); err != nil && r.err == nil {
			r.err = fmt.Errorf("closing spill file %s: %w", r.path, err)
		}
	}
}

// drainLocked writes every queued buffer, in queue order, recycles it and
// flushes the file. The caller holds r.wmu. With writer set it is the
// writer goroutine and clears r.writing when it finds the queue empty.
func (r *recorder) drainLocked(writer bool) {
	for {
		r.mu.Lock()
		q := r.queue
		r.queue = nil
		r.pending.Store(0)
		if len(q) == 0 {
			if writer {
				r.writing = false
			}
			r.mu.Unlock()
			break
		}
		r.mu.Unlock()
		for _, b := range q {
			// Events whose slot was reserved before the seal may still be
			// being written; wait for them (a few instructions each).
			for b.done.Load() != b.count {
				runtime.Gosched()
			}
			r.write(b)
			b.done.Store(0)
			b.count = 0
			b.state.Store(0)
		}
		r.mu.Lock()
		r.free = append(r.free, q...)
		r.mu.Unlock()
	}
	r.flush()
}

func (r *recorder) write(b *buffer) {
	n := int(b.count)
	if n == 0 {
		return
	}
	if r.err != nil || r.fileClosed {
		r.dropped.Add(int64(n))
		return
	}
	p := abi.AppendRawEvents(r.scratch[:abi.RawFrameSize], b.ev[:n])
	abi.PutRawFrameHeader(p)
	r.scratch = p[:0]
	if _, err := r.w.Write(p); err != nil {
		r.err = fmt.Errorf("writing spill file %s: %w", r.path, err)
		r.dropped.Add(int64(n))
		return
	}
	r.events.Add(int64(n))
}

func (r *recorder) flush() {
	if r.err != nil || r.fileClosed {
		return
	}
	if err := r.w.Flush(); err != nil {
		r.err = fmt.Errorf("writing spill file %s: %w", r.path, err)
	}
}
