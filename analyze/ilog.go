package analyze

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

// ilog is what pass 3 (interference) needs of the trace, gathered during
// pass 1 so that the trace is not decoded again: the (time, goroutine,
// site) of init, use and dispose rows, thinned and compactly encoded.
//
// Thinning. Every interference window [τ1 − δ, τ2] is at least δ long
// (τ2 ≥ τ1). For one (goroutine, site), if the rows kept around a dropped
// row t lie at k1 ≤ t ≤ k2 with k2 − k1 ≤ δ, a window containing t but
// neither k1 nor k2 would have k1 < lo ≤ hi < k2, so it would be shorter
// than δ: it contains k1 or k2, and the dropped row changes no answer of
// pass 3. Per (goroutine, site) the log keeps the first row, and then,
// from each kept row k, the last row within k + δ (or the next row when
// there is none), so a run of rows at one site shrinks to about two rows
// per δ. Rows arriving earlier than the (goroutine, site)'s latest row are
// simply kept. The thinning state lives in a direct-mapped cache; an
// evicted entry emits its pending row and the next row of that pair starts
// afresh, which keeps more rows than needed but never too few. The cache
// starts small and grows fourfold whenever it holds half as many pairs as
// it has slots, up to thinSlots: most traces are of short tests with a few
// hundred pairs.
//
// Encoding: rows are kept per goroutine (dense index), so that pass 3 can
// take one goroutine at a time with its windows and sweep state hot in
// the cache. Per row, the zig-zag varint of the time minus the
// goroutine's previous row's and the varint of the site, in chunks carved
// from 1 MiB slabs outside the heap; a goroutine's chunks grow from 256 B
// to 16 KiB. Beyond its memory budget (chunks handed out) the log writes
// retired chunks to a temporary file, remembering each goroutine's chunk
// offsets, and reuses their memory.
type ilog struct {
	delta   int64
	cache   []thinSlot
	mask    uint64 // len(cache) − 1
	live    int    // valid entries in cache
	gidx    map[uint64]uint32
	gcache  [1 << 10]gIdxSlot // direct-mapped cache in front of gidx
	gs      []uint64          // dense index → goroutine
	per     []glog            // per dense goroutine index
	free    [4][][]byte       // chunks to reuse, per size class
	slab    []byte            // rest of the current slab
	slabs   [][]byte          // off-heap slabs the chunks come from
	alloc   int64             // bytes of chunks handed out
	bytes   int64             // bytes in retired chunks
	rows    int64
	budget  int64
	tempDir string
	f       *os.File
	w       *bufio.Writer
	off     int64 // bytes written to f
	err     error
}

// glog is the log of one goroutine.
type glog struct {
	prevT  int64
	cur    []byte
	chunks [][]byte    // retired, in memory
	spill  []spillSpan // retired, in the file
	rows   int64
}

type spillSpan struct {
	off int64
	n   int32
}

type thinSlot struct {
	g     uint64
	k, p  int64 // last kept row, latest row (pending if pend)
	site  uint32
	gi    uint32
	valid bool
	pend  bool
}

// gIdxSlot caches a goroutine's dense index; gi+1, 0: empty.
type gIdxSlot struct {
	g  uint64
	gi uint32
}

const (
	ilogChunk = 16 << 10 // largest chunk; a goroutine's chunks grow 256 B, 1 KiB, 4 KiB, 16 KiB
	ilogSlab  = 1 << 20
	ilogMax   = 2 * binary.MaxVarintLen64 // bytes of one encoded row, at most
	thinSlots = 1 << 16
	thinFirst = 1 << 8 // slots of the thinning cache at first
)

func newIlog(delta, budget int64, tempDir string) *ilog {
	return &ilog{
		delta: delta, budget: budget, tempDir: tempDir,
		cache: make([]thinSlot, thinFirst),
		mask:  thinFirst - 1,
		gidx:  make(map[uint64]uint32),
	}
}

// newChunk returns an empty chunk buffer of size class c (256 B << 2c),
// outside the heap. Small first chunks keep a trace with many short-lived
// goroutines cheap.
func (l *ilog) newChunk(c int) []byte {
	if k := len(l.free[c]); k > 0 {
		b := l.free[c][k-1]
		l.free[c] = l.free[c][:k-1]
		return b[:0]
	}
	size := 256 << (2 * c)
	if len(l.slab) < size {
		slab, mem := offHeap[byte](ilogSlab)
		l.slabs = append(l.slabs, mem) // nil when on the heap
		l.slab = slab
	}
	b := l.slab[0:0:size]
	l.slab = l.slab[size:]
	l.alloc += int64(size)
	return b
}

// class returns the size class of chunk b.
func class(b []byte) int {
	switch cap(b) {
	case 256:
		return 0
	case 1 << 10:
		return 1
	case 4 << 10:
		return 2
	}
	return 3
}

// batch thins and logs the init, use and dispose rows of c with a valid
// site.
func (l *ilog) batch(c *trace.Batch) {
	n := c.Len()
	tm, gs, sites := c.Time[:n], c.G[:n], c.Site[:n]
	for i, op := range c.Op[:n] {
		if !abi.Op(op).Sited() {
			continue
		}
		site := sites[i]
		if !validSite(site) {
			continue
		}
		l.row(tm[i], gs[i], site)
	}
}

// thinHash is the slot of (g, site) in a thinning cache of mask+1 slots.
func thinHash(g uint64, site uint32, mask uint64) uint64 {
	return ((g*0x9E3779B97F4A7C15 ^ uint64(site)*0xC2B2AE3D27D4EB4F) >> 32) & mask
}

func (l *ilog) row(t int64, g uint64, site uint32) {
	e := &l.cache[thinHash(g, site, l.mask)]
	if !e.valid || e.g != g || e.site != site {
		if e.valid && e.pend {
			l.emit(e.p, e.gi, e.site)
		}
		if !e.valid {
			l.live++
			if 2*l.live > len(l.cache) && len(l.cache) < thinSlots {
				l.grow() // the new slot of (g, site) is empty too
				e = &l.cache[thinHash(g, site, l.mask)]
			}
		}
		gi := l.index(g)
		*e = thinSlot{g: g, site: site, gi: gi, k: t, p: t, valid: true}
		l.emit(t, gi, site)
		return
	}
	switch {
	case t < e.p:
		l.emit(t, e.gi, site) // out of order: keep it
	case t-e.k <= l.delta && t-e.k >= 0:
		e.p, e.pend = t, true
	default:
		if e.pend {
			l.emit(e.p, e.gi, site)
			e.k, e.pend = e.p, false
		}
		if t-e.k <= l.delta && t-e.k >= 0 {
			e.p, e.pend = t, true
		} else {
			l.emit(t, e.gi, site)
			e.k, e.p = t, t
		}
	}
}

// grow moves the thinning cache's entries into one four times its size.
// Entries in distinct slots stay in distinct slots: a slot's index is the
// low bits of the hash, and the new index only adds bits above them.
func (l *ilog) grow() {
	old := l.cache
	l.cache = make([]thinSlot, min(4*len(old), thinSlots))
	l.mask = uint64(len(l.cache) - 1)
	for i := range old {
		if o := &old[i]; o.valid {
			l.cache[thinHash(o.g, o.site, l.mask)] = *o
		}
	}
}

// index returns the dense index of goroutine g, adding it.
func (l *ilog) index(g uint64) uint32 {
	c := &l.gcache[(g*0x9E3779B97F4A7C15)>>54]
	if c.gi != 0 && c.g == g {
		return c.gi - 1
	}
	gi, ok := l.gidx[g]
	if !ok {
		gi = uint32(len(l.gs))
		l.gidx[g] = gi
		l.gs = append(l.gs, g)
		l.per = append(l.per, glog{})
	}
	*c = gIdxSlot{g: g, gi: gi + 1}
	return gi
}

func (l *ilog) emit(t int64, gi, site uint32) {
	g := &l.per[gi]
	if len(g.cur)+ilogMax > cap(g.cur) {
		c := 0
		if g.cur != nil {
			c = min(class(g.cur)+1, 3)
		}
		l.retire(g)
		g.cur = l.newChunk(c)
	}
	d := t - g.prevT
	g.prevT = t
	b := binary.AppendUvarint(g.cur, uint64(d<<1)^uint64(d>>63))
	g.cur = binary.AppendUvarint(b, uint64(site))
	g.rows++
	l.rows++
}

// retire moves g's current chunk to memory or to the spill file.
func (l *ilog) retire(g *glog) {
	if len(g.cur) == 0 {
		return
	}
	l.bytes += int64(len(g.cur))
	if l.f == nil && l.alloc > l.budget && l.err == nil {
		l.startSpill()
	}
	if l.f != nil {
		g.spill = append(g.spill, l.write(g.cur))
		l.free[class(g.cur)] = append(l.free[class(g.cur)], g.cur[:0])
		g.cur = nil
		return
	}
	g.chunks = append(g.chunks, g.cur)
	g.cur = nil
}

func (l *ilog) startSpill() {
	if l.tempDir != "" {
		if err := os.MkdirAll(l.tempDir, 0o755); err != nil {
			l.err = fmt.Errorf("interference spill: %w", err)
			return
		}
	}
	f, err := os.CreateTemp(l.tempDir, "wafl-analyze-interference-")
	if err != nil {
		l.err = fmt.Errorf("interference spill: %w", err)
		return
	}
	l.f, l.w = f, bufio.NewWriterSize(f, 1<<20)
	for i := range l.per {
		g := &l.per[i]
		for _, c := range g.chunks {
			g.spill = append(g.spill, l.write(c))
			l.free[class(c)] = append(l.free[class(c)], c[:0])
		}
		g.chunks = nil
	}
}

func (l *ilog) write(c []byte) spillSpan {
	sp := spillSpan{off: l.off, n: int32(len(c))}
	l.off += int64(len(c))
	if l.err == nil {
		if _, err := l.w.Write(c); err != nil {
			l.err = fmt.Errorf("interference spill %s: %w", l.f.Name(), err)
		}
	}
	return sp
}

// finish emits the pending rows of the cache and flushes the log.
func (l *ilog) finish() error {
	for i := range l.cache {
		if e := &l.cache[i]; e.valid && e.pend {
			l.emit(e.p, e.gi, e.site)
		}
	}
	l.cache = nil
	for i := range l.per {
		l.retire(&l.per[i])
	}
	if l.f != nil && l.err == nil {
		if err := l.w.Flush(); err != nil {
			l.err = fmt.Errorf("interference spill %s: %w", l.f.Name(), err)
		}
	}
	return l.err
}

// scan calls fn with every logged row of goroutine gi (index into l.gs),
// in the order logged. Scans of different goroutines may run
// concurrently.
func (l *ilog) scan(gi uint32, fn func(t int64, site uint32)) error {
	g := &l.per[gi]
	var prev int64
	decode := func(b []byte) error {
		for len(b) > 0 {
			d, n1 := binary.Uvarint(b)
			if n1 <= 0 {
				return fmt.Errorf("interference log: corrupt chunk")
			}
			site, n2 := binary.Uvarint(b[n1:])
			if n2 <= 0 {
				return fmt.Errorf("interference log: corrupt chunk")
			}
			b = b[n1+n2:]
			prev += int64(d>>1) ^ -int64(d&1)
			fn(prev, uint32(site))
		}
		return nil
	}
	if l.f == nil {
		for _, c := range g.chunks {
			if err := decode(c); err != nil {
				return err
			}
		}
		return nil
	}
	buf := make([]byte, ilogChunk)
	for _, sp := range g.spill {
		b := buf[:sp.n]
		if _, err := l.f.ReadAt(b, sp.off); err != nil {
			return fmt.Errorf("interference spill %s: %w", l.f.Name(), err)
		}
		if err := decode(b); err != nil {
			return err
		}
	}
	return nil
}

// spilled reports whether the log went to a file.
func (l *ilog) spilled() bool { return l.f != nil }

// close removes the spill file.
func (l *ilog) close() {
	if l.f != nil {
		l.f.Close()
		os.Remove(l.f.Name())
		l.f = nil
	}
	l.per, l.free, l.slab = nil, [4][][]byte{}, nil
	for _, m := range l.slabs {
		freeOffHeap(m)
	}
	l.slabs = nil
}
