package trace

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"github.com/memorder/wafl/abi"
)

// convertRows is the number of events per Arrow record batch written by
// Convert.
const convertRows = 1 << 16

// Convert converts the recorder's raw spill file at rawPath into an Arrow
// trace at outPath and returns the number of events written; the test
// boundary and subtest marks are left out. Rows keep the
// spill file's order: each goroutine's events in program order, fork rows
// written by the child when it adopts; rows are not sorted by time across
// goroutines. A truncated or corrupt spill file is converted up to its last
// good batch, the trace is closed properly, and the error (wrapping
// ErrTruncated or ErrCorrupt) is returned with the count.
func Convert(rawPath, outPath string, meta Meta) (events int64, err error) {
	return ConvertWithout(rawPath, outPath, meta, nil)
}

// ConvertWithout is Convert with the pauses p taken out of every time
// stamp (Pauses.Remove): the trace of a recording detection run, read as
// if wafl had injected no delay. A nil p changes nothing.
func ConvertWithout(rawPath, outPath string, meta Meta, pauses *Pauses) (events int64, err error) {
	return convert(rawPath, outPath, meta, pauses, nil)
}

// ConvertSubtests is ConvertWithout that also returns which subtest of
// the first level each site ran under (Subtests), nil when the run
// marked no subtest.
func ConvertSubtests(rawPath, outPath string, meta Meta, pauses *Pauses) (int64, *Subtests, error) {
	c := newSubtestCollector()
	n, err := convert(rawPath, outPath, meta, pauses, c)
	return n, c.result(), err
}

func convert(rawPath, outPath string, meta Meta, pauses *Pauses, c *subtestCollector) (events int64, err error) {
	in, err := os.Open(rawPath)
	if err != nil {
		return 0, fmt.Errorf("opening spill file: %w", err)
	}
	defer in.Close()
	// Buffers sized to the file: a test's spill file is often a few
	// kilobytes, and prepare converts one per test.
	size := int64(1 << 20)
	if fi, err := in.Stat(); err == nil {
		size = fi.Size()
	}
	bufSize := int(min(max(size, 4<<10), 1<<20))
	rr, err := NewRawReader(bufio.NewReaderSize(in, bufSize), rawPath)
	if err != nil && !errors.Is(err, ErrTruncated) {
		return 0, err
	}
	headerErr := err
	w, err := create(outPath, meta, bufSize)
	if err != nil {
		return 0, err
	}
	rows := int(min(max(size/abi.RawRecordSize, 64), convertRows))
	b := &Batch{
		Time:  make([]int64, 0, rows),
		G:     make([]uint64, 0, rows),
		Clock: make([]uint32, 0, rows),
		Site:  make([]uint32, 0, rows),
		Obj:   make([]uint64, 0, rows),
		Op:    make([]uint8, 0, rows),
	}
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		if err := w.Write(b); err != nil {
			return err
		}
		events += int64(b.Len())
		b.Reset()
		return nil
	}
	var readErr error
	if headerErr != nil {
		readErr = headerErr
	} else {
		for rr.Next() {
			p := rr.Payload()
			for len(p) > 0 {
				room := convertRows - b.Len()
				k := min(room, len(p)/abi.RawRecordSize)
				base := b.Len()
				decodeInto(b, p[:k*abi.RawRecordSize])
				c.take(b, base) // drops the subtest marks
				if pauses != nil {
					t := b.Time[base:]
					for i := range t {
						t[i] = pauses.Remove(t[i])
					}
				}
				p = p[k*abi.RawRecordSize:]
				if b.Len() == convertRows {
					if err := flush(); err != nil {
						w.Close()
						return events, err
					}
				}
			}
		}
		readErr = rr.Err()
	}
	if err := flush(); err != nil {
		w.Close()
		return events, err
	}
	if err := w.Close(); err != nil {
		return events, err
	}
	if readErr != nil {
		return events, fmt.Errorf("converted %d events to %s, then: %w", events, outPath, readErr)
	}
	return events, nil
}

// decodeInto appends the raw records in p to b's columns.
func decodeInto(b *Batch, p []byte) {
	n := len(p) / abi.RawRecordSize
	base := b.Len()
	b.Time, b.G, b.Clock = b.Time[:base+n], b.G[:base+n], b.Clock[:base+n]
	b.Site, b.Obj, b.Op = b.Site[:base+n], b.Obj[:base+n], b.Op[:base+n]
	t, g, c, s, o, op := b.Time[base:], b.G[base:], b.Clock[base:], b.Site[base:], b.Obj[base:], b.Op[base:]
	for i := range n {
		e := abi.DecodeRawEvent(p[i*abi.RawRecordSize:])
		t[i], g[i], c[i], s[i], o[i], op[i] = e.Time, e.G, e.Clock, e.Site, e.Obj, uint8(e.Op)
	}
}
