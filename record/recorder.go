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

// event is laid out exactly like a raw record (raw.go), so that on
// little-endian machines a buffer is written with one copy.
type event struct {
	time  int64
	g     uint64
	obj   uint64
	clock uint32
	site  uint32
	op    Op
	_     [7]byte
}

type buffer struct {
	state atomic.Uint64
	done  atomic.Uint32 // slots whose event is written
	count uint32        // slots reserved when sealed; set by the sealer
	ev    [bufEvents]event
}

type shard struct {
	cur atomic.Pointer[buffer]
	mu  sync.Mutex // held to swap cur
	_   [64 - 16]byte
}

type recorder struct {
	shards [numShards]shard
	path   string

	mu      sync.Mutex // guards queue, free, closed, writing, armed
	queue   []*buffer  // sealed buffers in hand-off order
	free    []*buffer
	closed  bool
	writing bool // a writer goroutine is running or about to
	armed   bool // the flush timer is set
	timer   *time.Timer
	pending atomic.Int32 // len(queue), readable without mu

	once sync.Once // Stop
	// reported is set once Finish has printed err.
	reported atomic.Bool

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

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func init() {
	// The one-copy write path relies on event matching the raw layout.
	var e event
	if unsafe.Sizeof(e) != RawRecordSize || unsafe.Offsetof(e.clock) != 24 || unsafe.Offsetof(e.site) != 28 || unsafe.Offsetof(e.op) != 32 {
		panic("wafl runtime: event layout does not match the raw record layout")
	}
}

// active is the recorder of the current recording, if any.
var active atomic.Pointer[recorder]

// StartRecording creates (truncating) the spill file at path and turns
// recording on: Init, Dispose, Store, Use and Adopt append events from now
// on until Finish or StopRecording. package record calls it from init when
// WAFL_MODE=record; tests may call it directly.
func StartRecording(path string) error {
	if r := active.Load(); r != nil && !r.isClosed() {
		return fmt.Errorf("recording to %s already in progress", r.path)
	}
	if m := Mode(mode.Load()); m == ModeDetect {
		return fmt.Errorf("cannot record: hooks are in %s mode", m)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating spill file: %w", err)
	}
	r := &recorder{
		path:    path,
		f:       f,
		w:       bufio.NewWriterSize(f, 1<<20),
		scratch: make([]byte, 0, RawFrameSize+bufEvents*RawRecordSize),
	}
	r.timer = time.AfterFunc(time.Hour, r.tick)
	r.timer.Stop()
	if _, err := r.f.Write(AppendRawHeader(nil)); err != nil {
		f.Close()
		return fmt.Errorf("writing spill file %s: %w", path, err)
	}
	active.Store(r)
	lcc.Enable()
	mode.Store(uint32(ModeRecord))
	return nil
}

// StopRecording flushes every recorded event to the spill file and closes
// it; later events are dropped. It returns the first write error. Calls
// after the first wait for it and return the same result.
func StopRecording() error {
	r := active.Load()
	if r == nil {
		return nil
	}
	r.once.Do(func() {
		mode.CompareAndSwap(uint32(ModeRecord), uint32(ModeOff))
		r.stop()
	})
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return r.err
}

// RecordingStats returns the number of events written to the current (or
// last) spill file and the number lost to write errors.
func RecordingStats() (written, dropped int64) {
	if r := active.Load(); r != nil {
		return r.events.Load(), r.dropped.Load()
	}
	return 0, 0
}

func (r *recorder) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// add appends one event to the shard of goroutine key, the goroutine
// calling add: its own events, or the fork row it writes when it adopts,
// so that a goroutine's fork row precedes its events in the file.
// hook (hooks.go) inlines the first attempt of the loop below for the
// event hooks; the two must reserve and publish slots the same way.
func (r *recorder) add(key uint64, t int64, g, obj uint64, clock, site uint32, op Op) {
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
					b.ev[s&countMask] = event{time: t, g: g, obj: obj, clock: clock, site: site, op: op}
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

// stop closes the recorder: later events are dropped, everything sealed
// is written, and the file is closed.
func (r *recorder) stop() {
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
	p := r.scratch[:RawFrameSize]
	if littleEndian {
		p = append(p, unsafe.Slice((*byte)(unsafe.Pointer(&b.ev[0])), n*RawRecordSize)...)
	} else {
		for i := range n {
			e := &b.ev[i]
			p = AppendRawEvent(p, RawEvent{Time: e.time, G: e.g, Obj: e.obj, Clock: e.clock, Site: e.site, Op: e.op})
		}
	}
	putRawFrameHeader(p)
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
