package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/memorder/wafl/abi"
)

// Reader streams a trace record batch by record batch.
type Reader struct {
	name  string
	f     *os.File
	mr    *msgReader
	ir    *ipc.Reader
	meta  Meta
	batch abi.Batch
	err   error
	done  bool
}

// Open opens the trace file at path and reads its schema.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening trace: %w", err)
	}
	r, err := newReader(bufio.NewReaderSize(f, 1<<20), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.f = f
	return r, nil
}

// NewReader reads a trace stream from r and reads its schema.
func NewReader(r io.Reader) (*Reader, error) { return newReader(r, "trace stream") }

func newReader(r io.Reader, name string) (rd *Reader, err error) {
	mr := &msgReader{r: r}
	ir, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		if errors.Is(err, abi.ErrTruncated) {
			return nil, fmt.Errorf("%s: no schema: %w", name, err)
		}
		return nil, fmt.Errorf("%s: not a wafl trace: %w", name, err)
	}
	meta, err := checkSchema(ir.Schema())
	if err != nil {
		ir.Release()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Reader{name: name, mr: mr, ir: ir, meta: meta}, nil
}

// Meta returns the trace's metadata.
func (r *Reader) Meta() Meta { return r.meta }

// Next advances to the next record batch. It returns false at the end of
// the stream or on an error (see Err).
func (r *Reader) Next() (ok bool) {
	if r.done {
		return false
	}
	defer func() {
		// Arrow's readers recover their own panics; this is a last guard
		// so that malformed input is an error here too.
		if p := recover(); p != nil {
			r.fail(fmt.Errorf("malformed record batch: %v", p))
			ok = false
		}
	}()
	for r.ir.Next() {
		rec := r.ir.Record()
		if rec.NumRows() == 0 {
			continue
		}
		if err := r.load(rec); err != nil {
			r.fail(err)
			return false
		}
		return true
	}
	r.done = true
	if err := r.ir.Err(); err != nil {
		r.fail(err)
	}
	r.batch = abi.Batch{}
	return false
}

func (r *Reader) fail(err error) {
	r.done = true
	r.batch = abi.Batch{}
	if r.err == nil {
		r.err = fmt.Errorf("%s: after %d messages: %w", r.name, r.mr.n, err)
	}
}

func (r *Reader) load(rec arrow.Record) error {
	n := int(rec.NumRows())
	cols := rec.Columns()
	if len(cols) != len(fields) {
		return fmt.Errorf("record batch has %d columns", len(cols))
	}
	for i, c := range cols {
		if c.Len() != n || c.NullN() != 0 {
			return fmt.Errorf("column %s: %d rows, %d nulls; want %d rows, no nulls", fields[i].Name, c.Len(), c.NullN(), n)
		}
	}
	t, ok0 := cols[0].(*array.Int64)
	g, ok1 := cols[1].(*array.Uint64)
	cl, ok2 := cols[2].(*array.Uint32)
	s, ok3 := cols[3].(*array.Uint32)
	o, ok4 := cols[4].(*array.Uint64)
	op, ok5 := cols[5].(*array.Uint8)
	if !(ok0 && ok1 && ok2 && ok3 && ok4 && ok5) {
		return errors.New("record batch columns have unexpected types")
	}
	r.batch = abi.Batch{
		Time:  t.Int64Values(),
		G:     g.Uint64Values(),
		Clock: cl.Uint32Values(),
		Site:  s.Uint32Values(),
		Obj:   o.Uint64Values(),
		Op:    op.Uint8Values(),
	}
	return r.batch.Check()
}

// Batch returns the current batch. Its slices alias the record batch's
// Arrow buffers and are valid until the next call to Next.
func (r *Reader) Batch() *abi.Batch { return &r.batch }

// Err returns the error that ended the iteration, nil at a clean end. It
// wraps abi.ErrTruncated when the stream was cut (including a stream without
// its end-of-stream marker); the batches before the cut were delivered.
func (r *Reader) Err() error { return r.err }

// Close releases the reader and closes the file if it was opened by Open.
func (r *Reader) Close() error {
	r.batch = abi.Batch{}
	if r.ir != nil {
		r.ir.Release()
		r.ir = nil
	}
	r.done = true
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}
