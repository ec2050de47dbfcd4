package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Reader streams a trace record batch by record batch.
type Reader struct {
	name  string
	f     *os.File
	mr    *msgReader
	ir    *ipc.Reader
	meta  Meta
	batch Batch
	own   Batch // decoding buffers when batch cannot alias the body
	err   error
	done  bool
}

// Open opens the trace file at path and reads its schema.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening trace: %w", err)
	}
	// A small buffer: message bodies (megabytes) are read past it, straight
	// into the reader's reused body buffer; no larger than the file.
	size := int64(64 << 10)
	if fi, err := f.Stat(); err == nil {
		size = min(max(fi.Size(), 4<<10), size)
	}
	r, err := newReader(bufio.NewReaderSize(f, int(size)), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.f = f
	return r, nil
}

func newReader(r io.Reader, name string) (rd *Reader, err error) {
	mr := &msgReader{r: r}
	ir, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		if errors.Is(err, ErrTruncated) {
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
// the stream or on an error (see Err). After the schema (which Arrow's
// reader parses), record batches are decoded here, into buffers reused
// from batch to batch: checkMessage has checked every offset and length
// the decoding uses.
func (r *Reader) Next() bool {
	if r.done {
		return false
	}
	for {
		body, err := r.mr.next()
		if err == errEOS {
			r.done = true
			r.batch = Batch{}
			return false
		}
		if err != nil {
			r.fail(err)
			return false
		}
		if r.mr.rb.rows == 0 {
			continue
		}
		decodeBatch(&r.batch, &r.own, body, &r.mr.rb)
		if err := r.batch.Check(); err != nil {
			r.fail(fmt.Errorf("malformed record batch: %w", err))
			return false
		}
		return true
	}
}

func (r *Reader) fail(err error) {
	r.done = true
	r.batch = Batch{}
	if r.err == nil {
		r.err = fmt.Errorf("%s: after %d messages: %w", r.name, r.mr.n, err)
	}
}

// Batch returns the current batch. Its slices alias the reader's buffers
// and are valid until the next call to Next.
func (r *Reader) Batch() *Batch { return &r.batch }

// Err returns the error that ended the iteration, nil at a clean end. It
// wraps ErrTruncated when the stream was cut (including a stream without
// its end-of-stream marker); the batches before the cut were delivered.
func (r *Reader) Err() error { return r.err }

// Close releases the reader and closes the file if it was opened by Open.
func (r *Reader) Close() error {
	r.batch = Batch{}
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
