package trace

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
)

// RawSource reads a spill file as batches of trace rows: the rows Convert
// would write to an Arrow trace (marks left out, pauses taken out of the
// times), for an analysis that keeps no trace file (the trace of a
// detection run that also recorded). A file cut inside a batch yields
// the rows before the cut, then Err wraps ErrTruncated, as Reader does
// for a converted trace.
type RawSource struct {
	f      *os.File
	rr     *RawReader
	meta   Meta
	pauses *Pauses
	b      Batch
	err    error
}

// OpenRaw opens the spill file at path; meta is what the source reports
// as the trace's metadata (a spill file has none) and pauses, if not nil,
// are taken out of every time stamp (Pauses.Remove).
func OpenRaw(path string, meta Meta, pauses *Pauses) (*RawSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening spill file: %w", err)
	}
	s := &RawSource{f: f, meta: meta, pauses: pauses}
	rr, err := NewRawReader(bufio.NewReaderSize(f, 1<<20), path)
	switch {
	case errors.Is(err, ErrTruncated):
		s.err = err // no rows
	case err != nil:
		f.Close()
		return nil, err
	}
	s.rr = rr
	return s, nil
}

// Meta returns the metadata OpenRaw was given.
func (s *RawSource) Meta() Meta { return s.meta }

// Next decodes the next rows, up to about convertRows of them (the
// spill file's batches are the recorder's buffers, a few thousand rows
// each), and reports whether there are any.
func (s *RawSource) Next() bool {
	if s.rr == nil || s.err != nil {
		return false
	}
	s.b.Reset()
	for s.b.Len() < convertRows/2 {
		if !s.rr.Next() {
			s.err = s.rr.Err()
			break
		}
		base := s.b.Len()
		s.b.grow(s.rr.Len())
		decodeInto(&s.b, s.rr.Payload())
		(*subtestCollector)(nil).take(&s.b, base) // drops the marks
		if s.pauses != nil {
			t := s.b.Time[base:]
			for i := range t {
				t[i] = s.pauses.Remove(t[i])
			}
		}
	}
	return s.b.Len() > 0
}

// Batch returns the current rows, valid until the next call to Next.
func (s *RawSource) Batch() *Batch { return &s.b }

// Err returns the error that ended the rows, nil at a clean end.
func (s *RawSource) Err() error { return s.err }

// Close closes the file.
func (s *RawSource) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// grow makes room for n more rows in every column.
func (b *Batch) grow(n int) {
	b.Time, b.G, b.Clock = slices.Grow(b.Time, n), slices.Grow(b.G, n), slices.Grow(b.Clock, n)
	b.Site, b.Obj, b.Op = slices.Grow(b.Site, n), slices.Grow(b.Obj, n), slices.Grow(b.Op, n)
}
