package trace

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Writer writes a trace as an Arrow IPC stream, one record batch per
// Write.
type Writer struct {
	schema *arrow.Schema
	w      *ipc.Writer
	bw     *bufio.Writer
	f      *os.File
	name   string
	err    error
	closed bool
}

// Create creates (truncating) the trace file at path.
func Create(path string, meta Meta) (*Writer, error) {
	return create(path, meta, 1<<20)
}

// create is Create with a write buffer of bufSize bytes.
func create(path string, meta Meta, bufSize int) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating trace: %w", err)
	}
	w := newWriter(f, meta, bufSize)
	w.f, w.name = f, path
	return w, nil
}

// NewWriter writes a trace stream to w. Close writes the end-of-stream
// marker; it does not close w.
func NewWriter(w io.Writer, meta Meta) (*Writer, error) {
	return newWriter(w, meta, 1<<20), nil
}

func newWriter(w io.Writer, meta Meta, bufSize int) *Writer {
	tw := &Writer{schema: schemaFor(meta), name: "trace stream"}
	tw.bw = bufio.NewWriterSize(w, bufSize)
	tw.w = ipc.NewWriter(tw.bw, ipc.WithSchema(tw.schema), ipc.WithAllocator(memory.DefaultAllocator))
	return tw
}

// bytesOf views a slice of fixed-size integers as bytes, without copying.
func bytesOf[T int64 | uint64 | uint32 | uint8](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Write appends b as one record batch. The columns are written without
// copying them into Arrow memory first. Empty batches are skipped.
func (w *Writer) Write(b *Batch) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("%s: write after Close", w.name)
	}
	if err := b.Check(); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	n := b.Len()
	if n == 0 {
		return nil
	}
	cols := [...][]byte{bytesOf(b.Time), bytesOf(b.G), bytesOf(b.Clock), bytesOf(b.Site), bytesOf(b.Obj), bytesOf(b.Op)}
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		d := array.NewData(fields[i].Type, n, []*memory.Buffer{nil, memory.NewBufferBytes(c)}, nil, 0, 0)
		arrs[i] = array.MakeFromData(d)
		d.Release()
	}
	rec := array.NewRecord(w.schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	err := w.w.Write(rec)
	rec.Release()
	if err != nil {
		w.err = fmt.Errorf("writing %s: %w", w.name, err)
	}
	return w.err
}

// Close writes the end-of-stream marker, flushes, and closes the file if
// the Writer was made by Create.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err == nil {
		if err := w.w.Close(); err != nil {
			w.err = fmt.Errorf("writing %s: %w", w.name, err)
		} else if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("writing %s: %w", w.name, err)
		}
	}
	if w.f != nil {
		if err := w.f.Close(); err != nil && w.err == nil {
			w.err = fmt.Errorf("closing %s: %w", w.name, err)
		}
	}
	return w.err
}
