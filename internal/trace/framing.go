package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// msgReader is an ipc.MessageReader that reads the IPC stream framing
// itself, so that it can tell a clean end (the end-of-stream marker) from a
// cut, and can check every length in a message against the bytes that are
// actually there before Arrow allocates anything for it.
type msgReader struct {
	r       io.Reader
	off     int64
	msg     *ipc.Message
	sawEOS  bool
	atStart bool // nothing read yet
	n       int  // messages read

	// After the schema, Reader.Next reads record batches through next,
	// which reuses these buffers from message to message.
	metaBuf, bodyBuf []byte
	rb               recBatch // the layout of the latest record batch
	hdr              [4]byte  // not on the stack: it would escape through m.r
}

// recBatch is where a record batch's columns lie in its body, as
// checkMessage found them (every buffer inside the body).
type recBatch struct {
	rows int64
	data [len(Columns)][2]int64 // offset and length of column i's data buffer
}

const (
	contToken   = 0xFFFFFFFF
	maxMetaLen  = 64 << 20
	maxBodyLen  = 1 << 36
	readChunk   = 1 << 20
	exactBody   = 8 << 20 // bodies up to this size are allocated at once
	hdrSchema   = 1       // flatbuf.MessageHeader values
	hdrRecBatch = 3
)

var errEOS = io.EOF

func (m *msgReader) truncated(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("stream cut inside %s at offset %d: %w", what, m.off, ErrTruncated)
	}
	return fmt.Errorf("reading %s at offset %d: %w", what, m.off, err)
}

// Message implements ipc.MessageReader. Arrow reads the schema through it;
// the record batches are read by next.
func (m *msgReader) Message() (*ipc.Message, error) {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	meta, body, err := m.read(nil, nil, nil)
	if err != nil {
		return nil, err
	}
	mb, bb := memory.NewBufferBytes(meta), memory.NewBufferBytes(body)
	m.msg = ipc.NewMessage(mb, bb)
	mb.Release()
	bb.Release()
	return m.msg, nil
}

// next reads the next message, which must be a record batch, into the
// reader's reused buffers, and returns its body; m.rb says where its
// columns are. At the end of the stream it returns errEOS.
func (m *msgReader) next() ([]byte, error) {
	meta, body, err := m.read(m.metaBuf, m.bodyBuf, &m.rb)
	if err != nil {
		return nil, err
	}
	m.metaBuf, m.bodyBuf = meta[:0], body[:0]
	return body, nil
}

// read reads one message into meta and body (reused when their capacity
// suffices) and checks it. If rb is not nil, only a record batch is
// accepted, and its layout goes to rb.
func (m *msgReader) read(meta, body []byte, rb *recBatch) ([]byte, []byte, error) {
	if m.sawEOS {
		return nil, nil, errEOS
	}
	b := &m.hdr
	n, err := io.ReadFull(m.r, b[:])
	if err != nil {
		if n == 0 && err == io.EOF {
			// End of input without the end-of-stream marker: the writer
			// did not finish. Report it as a cut, after the batches read.
			return nil, nil, fmt.Errorf("stream ends at offset %d without its end-of-stream marker: %w", m.off, ErrTruncated)
		}
		return nil, nil, m.truncated("a message header", err)
	}
	length := binary.LittleEndian.Uint32(b[:])
	hdr := int64(4)
	if length == contToken {
		if _, err := io.ReadFull(m.r, b[:]); err != nil {
			return nil, nil, m.truncated("a message header", err)
		}
		length = binary.LittleEndian.Uint32(b[:])
		hdr = 8
	}
	if length == 0 {
		m.sawEOS = true
		m.off += hdr
		return nil, nil, errEOS
	}
	if length > maxMetaLen {
		return nil, nil, fmt.Errorf("message at offset %d claims %d bytes of metadata: corrupt", m.off, length)
	}
	if cap(meta) >= int(length) {
		meta = meta[:length]
	} else {
		meta = make([]byte, length)
	}
	if _, err := io.ReadFull(m.r, meta); err != nil {
		return nil, nil, m.truncated("message metadata", err)
	}
	bodyLen, err := checkMessage(meta, rb)
	if err != nil {
		return nil, nil, fmt.Errorf("message at offset %d: %v", m.off, err)
	}
	body, err = readBody(m.r, bodyLen, body)
	if err != nil {
		return nil, nil, m.truncated("a message body", err)
	}
	m.off += hdr + int64(length) + bodyLen
	m.n++
	return meta, body, nil
}

// readBody reads n bytes into buf if its capacity suffices, else into a
// new buffer. Large bodies are read into a buffer that grows as data
// arrives, so that a cut stream claiming a huge body costs only what is
// there.
func readBody(r io.Reader, n int64, buf []byte) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	if int64(cap(buf)) >= n {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	if n <= exactBody {
		buf := make([]byte, n)
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	buf = make([]byte, 0, readChunk)
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(n, int64(cap(buf))*2))
			copy(nb, buf)
			buf = nb
		}
		k, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func (m *msgReader) Retain() {}

func (m *msgReader) Release() {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

// fb is a bounds-checked view of a flatbuffer, enough to validate the
// Arrow Message and RecordBatch tables (format/Message.fbs) before Arrow's
// own, unchecked, accessors see them.
type fb []byte

func (b fb) u16(off int) (int, bool) {
	if off < 0 || off+2 > len(b) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(b[off:])), true
}

func (b fb) u32(off int) (uint32, bool) {
	if off < 0 || off+4 > len(b) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[off:]), true
}

func (b fb) i64(off int) (int64, bool) {
	if off < 0 || off+8 > len(b) {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b[off:])), true
}

// field returns the absolute offset of field i of the table at t, 0 if
// the field is absent, or -1 if the table is malformed.
func (b fb) field(t, i int) int {
	so, ok := b.u32(t)
	if !ok {
		return -1
	}
	vt := t - int(int32(so))
	vsize, ok := b.u16(vt)
	if !ok || vsize < 4 || vt+vsize > len(b) {
		return -1
	}
	if 4+2*i+2 > vsize {
		return 0
	}
	fo, _ := b.u16(vt + 4 + 2*i)
	if fo == 0 {
		return 0
	}
	return t + fo
}

// deref follows the uoffset at off.
func (b fb) deref(off int) (int, bool) {
	u, ok := b.u32(off)
	if !ok || int64(off)+int64(u) >= int64(len(b)) {
		return 0, false
	}
	return off + int(u), true
}

// checkMessage validates an IPC message's metadata and returns its body
// length. Only the schema and record batch messages a trace contains are
// accepted; every buffer of a record batch must lie inside the body. If
// rb is not nil, the message must be a record batch, and its layout is
// stored in rb.
func checkMessage(meta []byte, rb *recBatch) (int64, error) {
	b := fb(meta)
	root, ok := b.deref(0)
	if !ok {
		return 0, errors.New("corrupt metadata (root)")
	}
	field := func(t, i int) (int, error) {
		f := b.field(t, i)
		if f < 0 {
			return 0, errors.New("corrupt metadata (vtable)")
		}
		return f, nil
	}
	if err := b.checkKeyValues(root, 4); err != nil {
		return 0, err
	}
	var bodyLen int64
	f, err := field(root, 3)
	if err != nil {
		return 0, err
	}
	if f > 0 {
		if bodyLen, ok = b.i64(f); !ok || bodyLen < 0 || bodyLen > maxBodyLen {
			return 0, fmt.Errorf("corrupt metadata (body length %d)", bodyLen)
		}
	}
	f, err = field(root, 1)
	if err != nil {
		return 0, err
	}
	htype := 0
	if f > 0 {
		if f >= len(b) {
			return 0, errors.New("corrupt metadata (header type)")
		}
		htype = int(b[f])
	}
	f, err = field(root, 2)
	if err != nil {
		return 0, err
	}
	if f == 0 {
		return 0, errors.New("message has no header")
	}
	hdr, ok := b.deref(f)
	if !ok {
		return 0, errors.New("corrupt metadata (header)")
	}
	if _, ok := b.u32(hdr); !ok {
		return 0, errors.New("corrupt metadata (header)")
	}
	switch htype {
	case hdrSchema:
		if rb != nil {
			return 0, errors.New("a second schema message in a wafl trace")
		}
		if err := b.checkSchemaTable(hdr); err != nil {
			return 0, err
		}
		return bodyLen, nil
	case hdrRecBatch:
	default:
		return 0, fmt.Errorf("unexpected message type %d in a wafl trace", htype)
	}
	// RecordBatch: 0 length, 1 nodes, 2 buffers, 3 compression.
	if f, err = field(hdr, 3); err != nil {
		return 0, err
	} else if f > 0 {
		return 0, errors.New("compressed record batches are not supported in wafl traces")
	}
	rows := int64(0)
	if f, err = field(hdr, 0); err != nil {
		return 0, err
	} else if f > 0 {
		if rows, ok = b.i64(f); !ok || rows < 0 || rows > bodyLen {
			return 0, fmt.Errorf("corrupt record batch (length %d)", rows)
		}
	}
	vec := func(i int) (start, n int, err error) {
		f, err := field(hdr, i)
		if err != nil || f == 0 {
			return 0, 0, err
		}
		v, ok := b.deref(f)
		if !ok {
			return 0, 0, errors.New("corrupt record batch (vector)")
		}
		cnt, ok := b.u32(v)
		if !ok || int64(v)+4+int64(cnt)*16 > int64(len(b)) {
			return 0, 0, errors.New("corrupt record batch (vector length)")
		}
		return v + 4, int(cnt), nil
	}
	ns, nn, err := vec(1)
	if err != nil {
		return 0, err
	}
	for i := range nn {
		l, _ := b.i64(ns + 16*i)
		nulls, _ := b.i64(ns + 16*i + 8)
		if l != rows || nulls != 0 {
			return 0, fmt.Errorf("corrupt record batch (column %d: %d rows, %d nulls; want %d rows, no nulls)", i, l, nulls, rows)
		}
	}
	bs, bn, err := vec(2)
	if err != nil {
		return 0, err
	}
	for i := range bn {
		o, _ := b.i64(bs + 16*i)
		l, _ := b.i64(bs + 16*i + 8)
		if o < 0 || l < 0 || o > bodyLen || l > bodyLen-o {
			return 0, fmt.Errorf("corrupt record batch (buffer %d at %d+%d outside a body of %d bytes)", i, o, l, bodyLen)
		}
	}
	if nn != len(fields) || bn != 2*len(fields) {
		return 0, fmt.Errorf("record batch has %d columns and %d buffers, want %d and %d", nn, bn, len(fields), 2*len(fields))
	}
	for i, c := range Columns {
		o, _ := b.i64(bs + 16*(2*i+1))
		l, _ := b.i64(bs + 16*(2*i+1) + 8)
		if l/int64(c.Width) < rows {
			return 0, fmt.Errorf("corrupt record batch (column %d: %d bytes for %d rows)", i, l, rows)
		}
		if rb != nil {
			rb.data[i] = [2]int64{o, l}
		}
	}
	if rb != nil {
		rb.rows = rows
	}
	return bodyLen, nil
}

// vector returns the start and length of the vector referenced by field i
// of table t (n == 0 if absent), checking that n elements of size elem fit.
func (b fb) vector(t, i, elem int) (start, n int, err error) {
	f := b.field(t, i)
	if f < 0 {
		return 0, 0, errors.New("corrupt metadata (vtable)")
	}
	if f == 0 {
		return 0, 0, nil
	}
	v, ok := b.deref(f)
	if !ok {
		return 0, 0, errors.New("corrupt metadata (vector offset)")
	}
	cnt, ok := b.u32(v)
	if !ok || int64(v)+4+int64(cnt)*int64(elem) > int64(len(b)) {
		return 0, 0, errors.New("corrupt metadata (vector length)")
	}
	return v + 4, int(cnt), nil
}

// table follows the uoffset at off to a table whose vtable is sound.
func (b fb) table(off int) (int, error) {
	t, ok := b.deref(off)
	if !ok || b.field(t, 0) < 0 {
		return 0, errors.New("corrupt metadata (table)")
	}
	return t, nil
}

// checkKeyValues checks a vector of KeyValue tables (two strings each).
func (b fb) checkKeyValues(t, i int) error {
	s, n, err := b.vector(t, i, 4)
	if err != nil {
		return err
	}
	for k := range n {
		kv, err := b.table(s + 4*k)
		if err != nil {
			return err
		}
		for j := range 2 {
			if _, _, err := b.vector(kv, j, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSchemaTable checks the parts of a Schema table (format/Schema.fbs)
// that Arrow reads without bounds checks, and that every field is a plain
// integer column, as in every wafl trace.
func (b fb) checkSchemaTable(t int) error {
	const typeInt = 2 // flatbuf.Type_Int
	if err := b.checkKeyValues(t, 2); err != nil {
		return err
	}
	if _, _, err := b.vector(t, 3, 8); err != nil { // features
		return err
	}
	s, n, err := b.vector(t, 1, 4)
	if err != nil {
		return err
	}
	if n > 64 {
		return fmt.Errorf("schema has %d fields", n)
	}
	for k := range n {
		f, err := b.table(s + 4*k)
		if err != nil {
			return err
		}
		if _, _, err := b.vector(f, 0, 1); err != nil { // name
			return err
		}
		tt := b.field(f, 2)
		if tt <= 0 || tt >= len(b) || b[tt] != typeInt {
			return errors.New("schema has a non-integer field: not a wafl trace")
		}
		ty := b.field(f, 3)
		if ty <= 0 {
			return errors.New("corrupt metadata (field type)")
		}
		if _, err := b.table(ty); err != nil {
			return err
		}
		if d := b.field(f, 4); d != 0 {
			return errors.New("schema has a dictionary field: not a wafl trace")
		}
		if _, c, err := b.vector(f, 5, 4); err != nil || c != 0 {
			return errors.New("schema has nested fields: not a wafl trace")
		}
		if err := b.checkKeyValues(f, 6); err != nil {
			return err
		}
	}
	return nil
}
