package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/memorder/wafl/abi"
)

// ErrTruncated reports a spill file (or trace) that ends inside a batch:
// everything before that batch was delivered.
var ErrTruncated = errors.New("truncated")

// ErrCorrupt reports a batch whose checksum or header does not match.
var ErrCorrupt = errors.New("corrupt")

// RawReader reads a spill file batch by batch.
type RawReader struct {
	r    io.Reader
	name string
	buf  []byte
	n    int
	off  int64
	err  error
}

// NewRawReader reads and checks the file header. name is used in errors.
func NewRawReader(r io.Reader, name string) (*RawReader, error) {
	var h [abi.RawHeaderSize]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if n == 0 && err == io.EOF {
			return nil, fmt.Errorf("%s: empty file, not a wafl spill file: %w", name, ErrTruncated)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: file header cut short after %d bytes: %w", name, n, ErrTruncated)
		}
		return nil, fmt.Errorf("%s: reading header: %w", name, err)
	}
	if string(h[:8]) != abi.RawMagic {
		return nil, fmt.Errorf("%s: not a wafl spill file (magic %q)", name, h[:8])
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != abi.RawVersion {
		return nil, fmt.Errorf("%s: spill file version %d, this wafl reads version %d", name, v, abi.RawVersion)
	}
	if s := binary.LittleEndian.Uint32(h[12:]); s != abi.RawRecordSize {
		return nil, fmt.Errorf("%s: record size %d, want %d", name, s, abi.RawRecordSize)
	}
	return &RawReader{r: r, name: name, off: abi.RawHeaderSize}, nil
}

// Next reads the next batch. It returns false at the end of the file or on
// an error (see Err).
func (r *RawReader) Next() bool {
	if r.err != nil {
		return false
	}
	var h [abi.RawFrameSize]byte
	n, err := io.ReadFull(r.r, h[:])
	if err != nil {
		switch {
		case n == 0 && err == io.EOF:
			r.err = io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			r.err = fmt.Errorf("%s: batch header at offset %d cut short: %w", r.name, r.off, ErrTruncated)
		default:
			r.err = fmt.Errorf("%s: offset %d: %w", r.name, r.off, err)
		}
		return false
	}
	cnt := binary.LittleEndian.Uint32(h[:])
	if cnt == 0 || cnt > abi.MaxRawBatch {
		r.err = fmt.Errorf("%s: batch at offset %d claims %d records (want 1..%d): %w", r.name, r.off, cnt, abi.MaxRawBatch, ErrCorrupt)
		return false
	}
	size := int(cnt) * abi.RawRecordSize
	if cap(r.buf) < size {
		r.buf = make([]byte, size)
	}
	r.buf = r.buf[:size]
	if n, err := io.ReadFull(r.r, r.buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			r.err = fmt.Errorf("%s: batch at offset %d has %d of %d bytes: %w", r.name, r.off, n, size, ErrTruncated)
		} else {
			r.err = fmt.Errorf("%s: offset %d: %w", r.name, r.off, err)
		}
		return false
	}
	if sum := crc32.Checksum(r.buf, abi.Castagnoli); sum != binary.LittleEndian.Uint32(h[4:]) {
		r.err = fmt.Errorf("%s: batch at offset %d: checksum mismatch: %w", r.name, r.off, ErrCorrupt)
		return false
	}
	r.off += int64(abi.RawFrameSize + size)
	r.n = int(cnt)
	return true
}

// Len returns the number of records in the current batch.
func (r *RawReader) Len() int { return r.n }

// Payload returns the current batch's records, abi.RawRecordSize bytes each;
// valid until the next call to Next.
func (r *RawReader) Payload() []byte { return r.buf }

// Err returns the error that stopped Next, or nil at a clean end of file.
// It wraps ErrTruncated when the file ends inside a batch and ErrCorrupt
// when a batch fails its checks.
func (r *RawReader) Err() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
}

// ReadRawFile reads every record of the spill file at path: the reader
// of the tests of the packages that write spill files (the wafl process
// streams them with RawReader). A file cut inside a batch returns the records before the cut
// and an error wrapping ErrTruncated.
func ReadRawFile(path string) ([]abi.RawEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := NewRawReader(f, path)
	if err != nil {
		return nil, err
	}
	var out []abi.RawEvent
	for r.Next() {
		for i := range r.Len() {
			out = append(out, abi.DecodeRawEvent(r.buf[i*abi.RawRecordSize:]))
		}
	}
	return out, r.Err()
}
