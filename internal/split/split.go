// Package split turns the raw spill file of a preparation run that ran
// several top-level tests of a package in one process into one raw spill
// file per test, each as if the test had run alone, so that the analysis
// and the plans stay per test (docs/algorithm.md, "One process per
// package").
//
// The run carries test boundary marks (abi.OpTestBegin, abi.OpTestEnd)
// written by the generated first statement of every top-level test. A
// test's window is [begin, end] on its own goroutine, the test's root;
// events are attributed so:
//
//   - A goroutine is owned by the test whose root it descends from by fork
//     rows (instrumented go statements and func values handed to other
//     packages, t.Run among them): parallel tests and subtests stay apart
//     however they interleave in time.
//   - An owned goroutine's events up to its test's end plus Grace go to
//     that test; later ones (a goroutine that outlives its test) are
//     dropped and counted (TestStats.Late). In a process of its own the
//     test would have ended and the process exited soon after its end.
//   - Events of goroutines owned by no test (the main goroutine, package
//     initialization, TestMain, goroutines started by code wafl did not
//     instrument) before the first test begins are the prologue, copied
//     into every test's trace; after the last test ends, the epilogue,
//     also copied into every test's trace. Both are shifted in time so
//     that they stand right before the test's begin and right after its
//     end, as they would in a run of the test alone.
//   - Such events between the first begin and the last end go to every
//     test whose window holds them (Stats.Shared counts those given to more
//     than one), or, outside every window, to the test that ended last if
//     within Grace; the rest are dropped and counted (Stats.Unattributed).
//
// The marks themselves are dropped: the per-test files hold the event
// kinds of a run of one test.
package split

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

// Grace is how long after its test's end the events of the test's
// goroutines still count as the test's, and how long after a window an
// unowned event is still given to the test that ended last.
const Grace = 50 * time.Millisecond

// TestStats is what the split gave one test.
type TestStats struct {
	Name   string
	Runs   int   // begin marks (more than one with -test.cpu lists)
	Ended  bool  // every run has an end mark
	Failed bool  // an end mark says the test failed
	Events int64 // events written to the test's file
	Late   int64 // events of its goroutines after its end + Grace, dropped
	// Begin and End are the first begin and the last end (ns, the
	// recorder's clock); End is 0 unless Ended.
	Begin, End int64
}

// Stats is the outcome of a split.
type Stats struct {
	Events       int64 // events in the spill file (marks included)
	Marks        int64
	Prologue     int64 // events before the first test, copied to every test
	Epilogue     int64 // events after the last test, copied to every test
	Shared       int64 // unowned events given to more than one test
	Unattributed int64 // unowned events outside every window, dropped
	Truncated    bool  // the spill file ends inside a batch (a crashed run)
	Tests        map[string]*TestStats

	owner map[uint64]int // goroutine → window index, -1: none
	wins  []window
}

// Owner returns the test that owns goroutine g (its root or a
// descendant of it by fork rows), or "".
func (s *Stats) Owner(g uint64) string {
	if w, ok := s.owner[g]; ok && w >= 0 {
		return s.wins[w].test
	}
	return ""
}

type window struct {
	test       string
	ti         int // index of test in Split's tests
	root       uint64
	begin, end int64 // end: math.MaxInt64 until the end mark
}

// Split reads the spill file raw and writes, for each of tests (top-level
// test names), a spill file at out(test) holding the events attributed to
// it (package doc). A file cut inside a batch (a crashed run) is split up
// to the cut; Stats.Truncated says so.
func Split(raw string, tests []string, out func(test string) string) (*Stats, error) {
	byID := make(map[uint64]int, len(tests))
	st := &Stats{Tests: make(map[string]*TestStats, len(tests)), owner: map[uint64]int{}}
	tstats := make([]*TestStats, 0, len(tests)) // by index into tests
	uniq := make([]string, 0, len(tests))       // a test listed twice is split once
	for _, t := range tests {
		if _, dup := st.Tests[t]; dup {
			continue
		}
		byID[abi.TestID(t)] = len(uniq)
		tstats = append(tstats, &TestStats{Name: t})
		st.Tests[t] = tstats[len(uniq)]
		uniq = append(uniq, t)
	}
	tests = uniq
	// Pass 1: the windows and the fork rows.
	parent := map[uint64]uint64{}
	err := scan(raw, st, func(e *abi.RawEvent) {
		switch e.Op {
		case abi.OpTestBegin:
			st.Marks++
			ti, ok := byID[e.Obj]
			if !ok {
				return
			}
			st.wins = append(st.wins, window{test: tests[ti], ti: ti, root: e.G, begin: e.Time, end: math.MaxInt64})
			ts := tstats[ti]
			if ts.Runs == 0 {
				ts.Begin = e.Time
			}
			ts.Runs++
		case abi.OpTestEnd:
			st.Marks++
			ti, ok := byID[e.Obj]
			if !ok {
				return
			}
			// The open window of this test, on this goroutine if any.
			best := -1
			for i := range st.wins {
				w := &st.wins[i]
				if w.ti == ti && w.end == math.MaxInt64 && (best < 0 || w.root == e.G) {
					best = i
				}
			}
			if best >= 0 {
				st.wins[best].end = e.Time
			}
			if e.Site != 0 {
				tstats[ti].Failed = true
			}
		case abi.OpFork:
			if _, dup := parent[e.Obj]; !dup {
				parent[e.Obj] = e.G
			}
		}
	})
	if err != nil {
		return nil, err
	}
	roots := map[uint64]int{}
	for i, w := range st.wins {
		if _, dup := roots[w.root]; !dup {
			roots[w.root] = i
		}
	}
	firstBegin, lastEnd := int64(math.MaxInt64), int64(math.MinInt64)
	for _, w := range st.wins {
		firstBegin = min(firstBegin, w.begin)
		lastEnd = max(lastEnd, w.end)
	}
	for _, ts := range st.Tests {
		ts.Ended = ts.Runs > 0
	}
	for _, w := range st.wins {
		ts := st.Tests[w.test]
		if w.end == math.MaxInt64 {
			ts.Ended = false
		} else {
			ts.End = max(ts.End, w.end)
		}
	}
	for _, ts := range st.Tests {
		if !ts.Ended {
			ts.End = 0
		}
	}
	// ownerOf resolves a goroutine's window through its fork ancestry.
	var chain []uint64
	ownerOf := func(g uint64) int {
		if w, ok := st.owner[g]; ok {
			return w
		}
		chain = chain[:0]
		w := -1
		for x := g; ; {
			if r, ok := roots[x]; ok {
				w = r
				break
			}
			if v, ok := st.owner[x]; ok {
				w = v
				break
			}
			chain = append(chain, x)
			p, ok := parent[x]
			if !ok || len(chain) > len(parent) {
				break
			}
			x = p
		}
		for _, x := range chain {
			st.owner[x] = w
		}
		st.owner[g] = w
		return w
	}
	for r, w := range roots {
		st.owner[r] = w
	}

	ws := make([]*writer, len(tests)) // by index into tests
	for i, t := range tests {
		w, err := newWriter(out(t))
		if err != nil {
			return nil, err
		}
		ws[i] = w
	}
	// Windows sorted by begin, for the unowned events' lookups.
	order := make([]int, len(st.wins))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return st.wins[order[a]].begin < st.wins[order[b]].begin })
	grace := Grace.Nanoseconds()
	var werr error
	emit := func(ti int, e abi.RawEvent) {
		tstats[ti].Events++
		if err := ws[ti].add(e); err != nil && werr == nil {
			werr = err
		}
	}
	var hit []int
	// The owner of the last event's goroutine: a spill file holds runs of
	// one goroutine's events (each thread's buffer in program order).
	lastKey, lastOwner := uint64(0), -2
	// Pass 2: every event to its tests.
	err = scan(raw, st, func(e *abi.RawEvent) {
		st.Events++
		if e.Op.Mark() {
			return
		}
		key := e.G
		if e.Op == abi.OpFork {
			key = e.Obj // a fork row goes with its child
		}
		if key != lastKey || lastOwner == -2 {
			lastKey, lastOwner = key, ownerOf(key)
		}
		if wi := lastOwner; wi >= 0 {
			w := &st.wins[wi]
			if w.end != math.MaxInt64 && e.Time > w.end+grace {
				tstats[w.ti].Late++
				return
			}
			emit(w.ti, *e)
			return
		}
		switch {
		case len(st.wins) == 0:
			st.Unattributed++
		case e.Time < firstBegin:
			st.Prologue++
			for ti, ts := range tstats {
				if ts.Runs > 0 {
					c := *e
					c.Time += ts.Begin - firstBegin
					emit(ti, c)
				}
			}
		case lastEnd != math.MaxInt64 && e.Time > lastEnd:
			st.Epilogue++
			for ti, ts := range tstats {
				if ts.Ended {
					c := *e
					c.Time -= lastEnd - ts.End
					emit(ti, c)
				}
			}
		default:
			hit = hit[:0]
			latest := -1
			for _, i := range order {
				w := st.wins[i]
				if w.begin > e.Time {
					break
				}
				if e.Time <= w.end {
					if !slices.Contains(hit, w.ti) {
						hit = append(hit, w.ti)
					}
				} else if latest < 0 || w.end > st.wins[latest].end {
					latest = i
				}
			}
			if len(hit) == 0 && latest >= 0 && e.Time-st.wins[latest].end <= grace {
				hit = append(hit, st.wins[latest].ti)
			}
			switch len(hit) {
			case 0:
				st.Unattributed++
			case 1:
			default:
				st.Shared++
			}
			for _, ti := range hit {
				emit(ti, *e)
			}
		}
	})
	for _, w := range ws {
		if cerr := w.close(); cerr != nil && werr == nil {
			werr = cerr
		}
	}
	if err != nil {
		return nil, err
	}
	return st, werr
}

// scan calls fn on every event of the spill file raw. A file cut inside a
// batch ends the scan without error and sets st.Truncated.
func scan(raw string, st *Stats, fn func(*abi.RawEvent)) error {
	f, err := os.Open(raw)
	if err != nil {
		return err
	}
	defer f.Close()
	size := int64(1 << 20)
	if fi, err := f.Stat(); err == nil {
		size = min(max(fi.Size(), 4<<10), 1<<20)
	}
	r, err := trace.NewRawReader(bufio.NewReaderSize(f, int(size)), raw)
	if err != nil {
		if errors.Is(err, trace.ErrTruncated) {
			st.Truncated = true
			return nil
		}
		return err
	}
	var e abi.RawEvent // one variable: fn's pointer would move a new one to the heap per event
	for r.Next() {
		p := r.Payload()
		for i := range r.Len() {
			e = abi.DecodeRawEvent(p[i*abi.RawRecordSize:])
			fn(&e)
		}
	}
	if err := r.Err(); err != nil {
		if errors.Is(err, trace.ErrTruncated) {
			st.Truncated = true
			return nil
		}
		return err
	}
	return nil
}

// writer appends events to one output spill file. It keeps the file
// closed between flushes, so that a package with many tests does not hold
// a descriptor per test.
type writer struct {
	path string
	buf  []abi.RawEvent
	enc  []byte
}

const writerBatch = 4096

func newWriter(path string) (*writer, error) {
	if err := os.WriteFile(path, abi.AppendRawHeader(nil), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return &writer{path: path}, nil
}

func (w *writer) add(e abi.RawEvent) error {
	w.buf = append(w.buf, e)
	if len(w.buf) >= writerBatch {
		return w.flush()
	}
	return nil
}

func (w *writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	w.enc = abi.AppendRawEvents(append(w.enc[:0], 0, 0, 0, 0, 0, 0, 0, 0), w.buf) // frame header, filled below
	abi.PutRawFrameHeader(w.enc)
	w.buf = w.buf[:0]
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	if _, err := f.Write(w.enc); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	return f.Close()
}

func (w *writer) close() error { return w.flush() }
