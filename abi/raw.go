package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"unsafe"
)

// The raw spill file is what the test binary writes while recording; the
// wafl process converts it to Arrow IPC (record/trace). Layout, all
// integers little-endian (docs/trace-format.md):
//
//	file header, 16 bytes: magic "WAFLRAW\x00", u32 version (1), u32 record size (40)
//	batches, repeated:      u32 record count n (1..MaxRawBatch), u32 CRC-32C of the payload,
//	                        payload of n records
//	record, 40 bytes:       i64 time ns, u64 goroutine, u64 object, u32 clock, u32 site,
//	                        u8 op, 7 zero bytes
//
// A batch is written with one write call; a crash leaves a prefix of the
// file, which reads up to the last complete batch.
const (
	RawMagic      = "WAFLRAW\x00"
	RawVersion    = FormatVersion
	RawRecordSize = 40
	RawHeaderSize = 16
	RawFrameSize  = 8       // batch header: count + checksum
	MaxRawBatch   = 1 << 20 // records per batch a reader accepts
)

// ErrTruncated reports a spill file (or trace) that ends inside a batch:
// everything before that batch was delivered.
var ErrTruncated = errors.New("truncated")

// ErrCorrupt reports a batch whose checksum or header does not match.
var ErrCorrupt = errors.New("corrupt")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// RawEvent is one record of the spill file. Its memory layout is the
// record's byte layout on little-endian machines, so the recorder keeps
// RawEvents in its buffers and writes a full buffer with one copy
// (AppendRawEvents).
type RawEvent struct {
	Time  int64
	G     uint64
	Obj   uint64
	Clock uint32
	Site  uint32
	Op    Op
	_     [7]byte
}

// littleEndian reports whether RawEvent's memory layout is the record layout.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// AppendRawEvents appends the encoding of evs to b: one copy on
// little-endian machines, field by field elsewhere.
func AppendRawEvents(b []byte, evs []RawEvent) []byte {
	if len(evs) == 0 {
		return b
	}
	if littleEndian {
		return append(b, unsafe.Slice((*byte)(unsafe.Pointer(&evs[0])), len(evs)*RawRecordSize)...)
	}
	for i := range evs {
		b = AppendRawEvent(b, evs[i])
	}
	return b
}

// DecodeRawEvent decodes the record at the start of b, which must hold at
// least RawRecordSize bytes.
func DecodeRawEvent(b []byte) RawEvent {
	_ = b[RawRecordSize-1]
	return RawEvent{
		Time:  int64(binary.LittleEndian.Uint64(b[0:])),
		G:     binary.LittleEndian.Uint64(b[8:]),
		Obj:   binary.LittleEndian.Uint64(b[16:]),
		Clock: binary.LittleEndian.Uint32(b[24:]),
		Site:  binary.LittleEndian.Uint32(b[28:]),
		Op:    Op(b[32]),
	}
}

// AppendRawEvent appends the encoding of e to b.
func AppendRawEvent(b []byte, e RawEvent) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(e.Time))
	b = binary.LittleEndian.AppendUint64(b, e.G)
	b = binary.LittleEndian.AppendUint64(b, e.Obj)
	b = binary.LittleEndian.AppendUint32(b, e.Clock)
	b = binary.LittleEndian.AppendUint32(b, e.Site)
	return append(b, byte(e.Op), 0, 0, 0, 0, 0, 0, 0)
}

// AppendRawHeader appends the spill file header to b.
func AppendRawHeader(b []byte) []byte {
	b = append(b, RawMagic...)
	b = binary.LittleEndian.AppendUint32(b, RawVersion)
	return binary.LittleEndian.AppendUint32(b, RawRecordSize)
}

// AppendRawBatch appends a batch frame around payload, which must hold a
// whole number (1..MaxRawBatch) of encoded records.
func AppendRawBatch(b, payload []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)/RawRecordSize))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// PutRawFrameHeader fills in the batch header at the start of frame, whose
// first RawFrameSize bytes are reserved and whose remaining bytes are the
// payload.
func PutRawFrameHeader(frame []byte) {
	payload := frame[RawFrameSize:]
	binary.LittleEndian.PutUint32(frame, uint32(len(payload)/RawRecordSize))
	binary.LittleEndian.PutUint32(frame[4:], crc32.Checksum(payload, castagnoli))
}

// RawReader reads a spill file batch by batch.
type RawReader struct {
	r     io.Reader
	name  string
	buf   []byte
	n     int
	off   int64
	err   error
	count int64
}

// NewRawReader reads and checks the file header. name is used in errors.
func NewRawReader(r io.Reader, name string) (*RawReader, error) {
	var h [RawHeaderSize]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if n == 0 && err == io.EOF {
			return nil, fmt.Errorf("%s: empty file, not a wafl spill file: %w", name, ErrTruncated)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: file header cut short after %d bytes: %w", name, n, ErrTruncated)
		}
		return nil, fmt.Errorf("%s: reading header: %w", name, err)
	}
	if string(h[:8]) != RawMagic {
		return nil, fmt.Errorf("%s: not a wafl spill file (magic %q)", name, h[:8])
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != RawVersion {
		return nil, fmt.Errorf("%s: spill file version %d, this wafl reads version %d", name, v, RawVersion)
	}
	if s := binary.LittleEndian.Uint32(h[12:]); s != RawRecordSize {
		return nil, fmt.Errorf("%s: record size %d, want %d", name, s, RawRecordSize)
	}
	return &RawReader{r: r, name: name, off: RawHeaderSize}, nil
}

// Next reads the next batch. It returns false at the end of the file or on
// an error (see Err).
func (r *RawReader) Next() bool {
	if r.err != nil {
		return false
	}
	var h [RawFrameSize]byte
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
	if cnt == 0 || cnt > MaxRawBatch {
		r.err = fmt.Errorf("%s: batch at offset %d claims %d records (want 1..%d): %w", r.name, r.off, cnt, MaxRawBatch, ErrCorrupt)
		return false
	}
	size := int(cnt) * RawRecordSize
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
	if sum := crc32.Checksum(r.buf, castagnoli); sum != binary.LittleEndian.Uint32(h[4:]) {
		r.err = fmt.Errorf("%s: batch at offset %d: checksum mismatch: %w", r.name, r.off, ErrCorrupt)
		return false
	}
	r.off += int64(RawFrameSize + size)
	r.n = int(cnt)
	r.count += int64(cnt)
	return true
}

// Len returns the number of records in the current batch.
func (r *RawReader) Len() int { return r.n }

// Payload returns the current batch's records, RawRecordSize bytes each;
// valid until the next call to Next.
func (r *RawReader) Payload() []byte { return r.buf }

// Event decodes record i of the current batch.
func (r *RawReader) Event(i int) RawEvent { return DecodeRawEvent(r.buf[i*RawRecordSize:]) }

// Events returns the number of records read so far.
func (r *RawReader) Events() int64 { return r.count }

// Err returns the error that stopped Next, or nil at a clean end of file.
// It wraps ErrTruncated when the file ends inside a batch and ErrCorrupt
// when a batch fails its checks.
func (r *RawReader) Err() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
}

// ReadRawFile reads every record of the spill file at path, for tests,
// dumps and small traces (the wafl process streams big ones with
// RawReader). A file cut inside a batch returns the records before the cut
// and an error wrapping ErrTruncated.
func ReadRawFile(path string) ([]RawEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := NewRawReader(f, path)
	if err != nil {
		return nil, err
	}
	var out []RawEvent
	for r.Next() {
		for i := range r.Len() {
			out = append(out, r.Event(i))
		}
	}
	return out, r.Err()
}
