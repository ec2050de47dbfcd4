package analyze

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/memorder/wafl/abi"
)

// lcEvent is one lifecycle event (init or dispose) of the trace. Pass 1
// keeps only these in memory: they are few (an object is initialized and
// disposed a handful of times) while uses are the bulk of a trace. In a
// spill file it is a raw record (abi.RawEvent).
type lcEvent struct {
	obj   uint64
	time  int64
	g     uint64
	clock uint32
	site  uint32
	op    abi.Op
}

func (e lcEvent) raw() abi.RawEvent {
	return abi.RawEvent{Time: e.time, G: e.g, Obj: e.obj, Clock: e.clock, Site: e.site, Op: e.op}
}

func lcEventOf(r abi.RawEvent) lcEvent {
	return lcEvent{obj: r.Obj, time: r.Time, g: r.G, clock: r.Clock, site: r.Site, op: r.Op}
}

const (
	lcEventSize = abi.RawRecordSize // encoded size in a spill file
	// lcEventCost is the memory an in-memory lifecycle event costs with
	// its share of the object index, used against Options.MemoryBudget.
	lcEventCost = 64
	// spillFanout is the number of object-hash partitions of the spill.
	spillFanout = 64
)

// partition returns the spill partition of obj (top 6 bits of a
// multiplicative hash; the object index uses different bits).
func partition(obj uint64) int {
	return int((obj * 0x9E3779B97F4A7C15) >> 58)
}

// lifecycleStore collects lifecycle events during pass 1. It keeps them
// in memory until they exceed the budget, then moves them to spillFanout
// partition files in a temporary directory and appends there.
type lifecycleStore struct {
	max     int // events kept in memory before spilling
	tempDir string
	mem     []lcEvent
	dir     string // spill directory, "" while in memory
	files   [spillFanout]*os.File
	w       [spillFanout]*bufio.Writer
	counts  [spillFanout]int
	buf     []byte // one record
}

func newLifecycleStore(budget int64, tempDir string) *lifecycleStore {
	return &lifecycleStore{max: int(max(budget/lcEventCost, 1024)), tempDir: tempDir}
}

func (s *lifecycleStore) add(e lcEvent) error {
	if s.dir == "" {
		s.mem = append(s.mem, e)
		if len(s.mem) <= s.max {
			return nil
		}
		if err := s.startSpill(); err != nil {
			return err
		}
		return nil
	}
	return s.write(e)
}

func (s *lifecycleStore) startSpill() error {
	if s.tempDir != "" {
		if err := os.MkdirAll(s.tempDir, 0o755); err != nil {
			return fmt.Errorf("spill: %w", err)
		}
	}
	dir, err := os.MkdirTemp(s.tempDir, "wafl-analyze-")
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	s.dir = dir
	for i := range s.files {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%02d", i)))
		if err != nil {
			return fmt.Errorf("spill: %w", err)
		}
		s.files[i] = f
		s.w[i] = bufio.NewWriterSize(f, 32<<10)
	}
	for _, e := range s.mem {
		if err := s.write(e); err != nil {
			return err
		}
	}
	s.mem = nil
	return nil
}

func (s *lifecycleStore) write(e lcEvent) error {
	s.buf = abi.AppendRawEvent(s.buf[:0], e.raw())
	p := partition(e.obj)
	s.counts[p]++
	if _, err := s.w[p].Write(s.buf); err != nil {
		return fmt.Errorf("spill %s: %w", s.files[p].Name(), err)
	}
	return nil
}

// finish flushes the spill files. It returns the groups of partitions to
// process one at a time, each fitting the budget where possible (a single
// partition larger than the budget forms its own group). In memory, there
// is one group holding every partition.
func (s *lifecycleStore) finish() ([]uint64, error) {
	if s.dir == "" {
		return []uint64{^uint64(0)}, nil
	}
	for i, w := range s.w {
		if err := w.Flush(); err != nil {
			return nil, fmt.Errorf("spill %s: %w", s.files[i].Name(), err)
		}
	}
	var groups []uint64
	var cur uint64
	n := 0
	for p := 0; p < spillFanout; p++ {
		if cur != 0 && n+s.counts[p] > s.max {
			groups = append(groups, cur)
			cur, n = 0, 0
		}
		cur |= 1 << p
		n += s.counts[p]
	}
	if cur != 0 {
		groups = append(groups, cur)
	}
	return groups, nil
}

// load returns the lifecycle events of the partitions in mask.
func (s *lifecycleStore) load(mask uint64) ([]lcEvent, error) {
	if s.dir == "" {
		ev := s.mem
		s.mem = nil
		return ev, nil
	}
	total := 0
	for p := 0; p < spillFanout; p++ {
		if mask&(1<<p) != 0 {
			total += s.counts[p]
		}
	}
	ev := make([]lcEvent, 0, total)
	buf := make([]byte, 64<<10/lcEventSize*lcEventSize)
	for p := 0; p < spillFanout; p++ {
		if mask&(1<<p) == 0 {
			continue
		}
		f := s.files[p]
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("spill %s: %w", f.Name(), err)
		}
		for {
			n, err := io.ReadFull(f, buf)
			for b := buf[:n-n%lcEventSize]; len(b) > 0; b = b[lcEventSize:] {
				ev = append(ev, lcEventOf(abi.DecodeRawEvent(b)))
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("spill %s: %w", f.Name(), err)
			}
		}
	}
	return ev, nil
}

// close removes the spill directory.
func (s *lifecycleStore) close() error {
	if s.dir == "" {
		return nil
	}
	for i, f := range s.files {
		if f != nil {
			f.Close()
			s.files[i] = nil
		}
	}
	err := os.RemoveAll(s.dir)
	s.dir, s.counts = "", [spillFanout]int{}
	return err
}

// objIndex maps an object to its lifecycle events, which lie sorted by
// time in ev[start:start+n]. It is an open-addressing hash table: one probe
// sequence over 16-byte slots, no pointers, so it is cheap for the
// collector and for the cache.
type objIndex struct {
	ev []lcEvent
	// nextDisp[i] is the offset, within i's object, of the first dispose
	// at or after i (the object's event count when there is none), so a
	// use finds its dispose without walking over re-initializations.
	nextDisp []int32
	slots    []objSlot
	mask     uint64
}

// lookCache is a one-entry cache in front of objIndex.lookup, one per
// goroutine: consecutive uses are often of the same object.
type lookCache struct {
	obj  uint64
	slot objSlot
}

type objSlot struct {
	obj      uint64
	start, n uint32 // n == 0: empty slot
}

// buildIndex sorts ev by (object, time) and indexes it.
func buildIndex(ev []lcEvent) *objIndex {
	slices.SortFunc(ev, func(a, b lcEvent) int {
		switch {
		case a.obj != b.obj:
			if a.obj < b.obj {
				return -1
			}
			return 1
		case a.time != b.time:
			if a.time < b.time {
				return -1
			}
			return 1
		}
		return int(a.op) - int(b.op)
	})
	objects := 0
	for i := range ev {
		if i == 0 || ev[i].obj != ev[i-1].obj {
			objects++
		}
	}
	size := 16
	for size < 2*objects {
		size <<= 1
	}
	x := &objIndex{ev: ev, nextDisp: make([]int32, len(ev)), slots: make([]objSlot, size), mask: uint64(size - 1)}
	for i := 0; i < len(ev); {
		j := i + 1
		for j < len(ev) && ev[j].obj == ev[i].obj {
			j++
		}
		next := int32(j - i)
		for k := j - 1; k >= i; k-- {
			if ev[k].op == abi.OpDispose {
				next = int32(k - i)
			}
			x.nextDisp[k] = next
		}
		h := mix(ev[i].obj) & x.mask
		for x.slots[h].n != 0 {
			h = (h + 1) & x.mask
		}
		x.slots[h] = objSlot{obj: ev[i].obj, start: uint32(i), n: uint32(j - i)}
		i = j
	}
	return x
}

func (x *objIndex) objects() int {
	n := 0
	for _, s := range x.slots {
		if s.n != 0 {
			n++
		}
	}
	return n
}

func mix(v uint64) uint64 {
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	return v
}

// lookup returns the lifecycle events of obj, sorted by time, and their
// nextDisp offsets. It only reads x; lc is the caller's cache.
func (x *objIndex) lookup(obj uint64, lc *lookCache) ([]lcEvent, []int32) {
	if lc.slot.n != 0 && lc.obj == obj {
		s := lc.slot
		return x.ev[s.start : s.start+s.n], x.nextDisp[s.start : s.start+s.n]
	}
	h := mix(obj) & x.mask
	for {
		s := x.slots[h]
		if s.n == 0 {
			return nil, nil
		}
		if s.obj == obj {
			*lc = lookCache{obj, s}
			return x.ev[s.start : s.start+s.n], x.nextDisp[s.start : s.start+s.n]
		}
		h = (h + 1) & x.mask
	}
}
