package analyze

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/memorder/wafl/internal/trace"
)

// rowSpill is a compact copy of the trace's init, use, dispose and check rows,
// written during pass 1 so that passes 2 and 3 read fixed 32-byte records
// with one reused buffer instead of decoding the trace again (decoding an
// Arrow stream costs several times more than reading this file). It lives
// in the temporary directory and is removed when the analysis ends.
type rowSpill struct {
	f    *os.File
	w    *bufio.Writer
	buf  [rowSize]byte
	rows int64
	// read side
	cols trace.Batch
	raw  []byte
}

const (
	rowSize = 8 + 8 + 8 + 4 + 4 // time, g, obj, clock, site|op<<30
	// maxSite is the largest site id a row spill can hold; a real site
	// table is nowhere near it, larger ids are malformed rows.
	maxSite   = 1<<30 - 1
	spillRows = 32 << 10 // rows per read batch
)

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
	return &rowSpill{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// add appends row i of c; the caller has checked op and site.
func (s *rowSpill) add(c *trace.Batch, i int) error {
	b := s.buf[:]
	binary.LittleEndian.PutUint64(b[0:], uint64(c.Time[i]))
	binary.LittleEndian.PutUint64(b[8:], c.G[i])
	binary.LittleEndian.PutUint64(b[16:], c.Obj[i])
	binary.LittleEndian.PutUint32(b[24:], c.Clock[i])
	binary.LittleEndian.PutUint32(b[28:], c.Site[i]|uint32(c.Op[i])<<30)
	s.rows++
	if _, err := s.w.Write(b); err != nil {
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
		s.raw = make([]byte, spillRows*rowSize)
		s.cols = trace.Batch{
			Time: make([]int64, spillRows), G: make([]uint64, spillRows), Obj: make([]uint64, spillRows),
			Clock: make([]uint32, spillRows), Site: make([]uint32, spillRows), Op: make([]uint8, spillRows),
		}
	}
	left := s.rows
	for left > 0 {
		n := int(min(left, spillRows))
		if _, err := io.ReadFull(s.f, s.raw[:n*rowSize]); err != nil {
			return fmt.Errorf("row spill %s: %w", s.f.Name(), err)
		}
		left -= int64(n)
		c := &s.cols
		tm, g, obj, clk, site, op := c.Time[:n], c.G[:n], c.Obj[:n], c.Clock[:n], c.Site[:n], c.Op[:n]
		for i := range tm {
			b := s.raw[i*rowSize : i*rowSize+rowSize]
			tm[i] = int64(binary.LittleEndian.Uint64(b[0:]))
			g[i] = binary.LittleEndian.Uint64(b[8:])
			obj[i] = binary.LittleEndian.Uint64(b[16:])
			clk[i] = binary.LittleEndian.Uint32(b[24:])
			x := binary.LittleEndian.Uint32(b[28:])
			site[i] = x & maxSite
			op[i] = uint8(x >> 30)
		}
		fn(&trace.Batch{Time: tm, G: g, Clock: clk, Site: site, Obj: obj, Op: op})
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
