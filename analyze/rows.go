package analyze

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

// rowSpill is a copy of the trace's init, use, dispose and check rows,
// written during pass 1 so that passes 2 and 3 read fixed-size records
// with one reused buffer instead of decoding the trace again (decoding an
// Arrow stream costs several times more than reading this file). Its
// records are the raw spill file's (abi.RawEvent, abi.RawRecordSize
// bytes), without that file's header and batch framing. It lives in the
// temporary directory and is removed when the analysis ends.
type rowSpill struct {
	f    *os.File
	w    *bufio.Writer
	buf  []byte // one record
	rows int64
	// read side
	cols trace.Batch
	raw  []byte
}

const spillRows = 32 << 10 // rows per read batch

func newRowSpill(dir string) (*rowSpill, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("row spill: %w", err)
		}
	}
	f, err := os.CreateTemp(dir, "wafl-analyze-rows-")
	if err != nil {
		return nil, fmt.Errorf("row spill: %w", err)
	}
	return &rowSpill{f: f, w: bufio.NewWriterSize(f, 1<<20), buf: make([]byte, 0, abi.RawRecordSize)}, nil
}

// add appends row i of c.
func (s *rowSpill) add(c *trace.Batch, i int) error {
	s.buf = abi.AppendRawEvent(s.buf[:0], c.Row(i))
	s.rows++
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("row spill %s: %w", s.f.Name(), err)
	}
	return nil
}

func (s *rowSpill) flush() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("row spill %s: %w", s.f.Name(), err)
	}
	return nil
}

// scan calls fn with every batch of the spill, in the order written.
func (s *rowSpill) scan(fn func(c *trace.Batch)) error {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("row spill %s: %w", s.f.Name(), err)
	}
	if s.raw == nil {
		s.raw = make([]byte, spillRows*abi.RawRecordSize)
	}
	left := s.rows
	for left > 0 {
		n := int(min(left, spillRows))
		if _, err := io.ReadFull(s.f, s.raw[:n*abi.RawRecordSize]); err != nil {
			return fmt.Errorf("row spill %s: %w", s.f.Name(), err)
		}
		left -= int64(n)
		c := &s.cols
		c.Reset()
		for b := s.raw[:n*abi.RawRecordSize]; len(b) > 0; b = b[abi.RawRecordSize:] {
			c.AppendRaw(abi.DecodeRawEvent(b))
		}
		fn(c)
	}
	return nil
}

// replay runs fn over the row spill, as one more pass.
func (a *analysis) replay(r *rowSpill, pass string, fn func(*trace.Batch)) error {
	a.stats.Passes++
	if err := r.scan(func(c *trace.Batch) {
		if a.ctx.Err() == nil {
			fn(c)
		}
	}); err != nil {
		return passError(pass, err)
	}
	return a.ctx.Err()
}

func (s *rowSpill) close() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
}
