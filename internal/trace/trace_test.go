package trace

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/memorder/wafl/abi"
)

var testMeta = Meta{Package: "example.com/p", Test: "TestX", Binary: "/b/p.test", Sites: "/b/p.sites.json"}

func randBatch(r *rand.Rand, n int) *Batch {
	b := &Batch{}
	for range n {
		b.Append(r.Int64(), r.Uint64(), r.Uint32(), r.Uint32(), r.Uint64(), uint8(r.IntN(5)))
	}
	return b
}

func concat(bs []*Batch) *Batch {
	out := &Batch{}
	for _, b := range bs {
		for i := range b.Len() {
			out.Append(b.Time[i], b.G[i], b.Clock[i], b.Site[i], b.Obj[i], b.Op[i])
		}
	}
	return out
}

// newStreamReader reads a trace held in memory (Open reads files).
func newStreamReader(r io.Reader) (*Reader, error) { return newReader(r, "trace stream") }

func encode(t testing.TB, bs ...*Batch) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testMeta)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads a stream; the error is from newStreamReader or Err.
func readAll(data []byte) (*Batch, Meta, error) {
	r, err := newStreamReader(bytes.NewReader(data))
	if err != nil {
		return nil, Meta{}, err
	}
	defer r.Close()
	var bs []*Batch
	for r.Next() {
		bs = append(bs, concat([]*Batch{r.Batch()})) // copy: slices die at Next
	}
	return concat(bs), r.Meta(), r.Err()
}

func equalPrefix(t *testing.T, got, want *Batch, n int) {
	t.Helper()
	if got.Len() != n {
		t.Fatalf("got %d events, want %d", got.Len(), n)
	}
	for i := range n {
		if got.Time[i] != want.Time[i] || got.G[i] != want.G[i] || got.Clock[i] != want.Clock[i] ||
			got.Site[i] != want.Site[i] || got.Obj[i] != want.Obj[i] || got.Op[i] != want.Op[i] {
			t.Fatalf("event %d differs", i)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	bs := []*Batch{randBatch(r, 100), randBatch(r, 0), randBatch(r, 1), randBatch(r, 5000)}
	got, meta, err := readAll(encode(t, bs...))
	if err != nil {
		t.Fatal(err)
	}
	want := testMeta
	want.Version = abi.FormatVersion
	if meta != want {
		t.Fatalf("meta %+v, want %+v", meta, want)
	}
	all := concat(bs)
	equalPrefix(t, got, all, all.Len())

	// File API, and an empty trace.
	path := filepath.Join(t.TempDir(), "t.arrows")
	w, err := Create(path, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rd, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Next() || rd.Err() != nil {
		t.Fatalf("empty trace: Next true or err %v", rd.Err())
	}
	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWriteErrors(t *testing.T) {
	w, err := NewWriter(&bytes.Buffer{}, testMeta)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&Batch{Time: []int64{1}}); err == nil || !strings.Contains(err.Error(), "differ in length") {
		t.Fatalf("ragged batch: %v", err)
	}
	w.Close()
	if err := w.Write(&Batch{}); err == nil {
		t.Fatal("write after close succeeded")
	}
	if _, err := Create(filepath.Join(t.TempDir(), "no", "dir", "x"), testMeta); err == nil {
		t.Fatal("Create in a missing directory succeeded")
	}
}

func TestTruncatedStream(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	bs := []*Batch{randBatch(r, 10), randBatch(r, 20), randBatch(r, 30)}
	all := concat(bs)
	data := encode(t, bs...)
	// Offsets where each batch's message ends: encode prefixes.
	var ends []int
	for i := range bs {
		ends = append(ends, len(encode(t, bs[:i+1]...))-8) // minus the end-of-stream marker
	}
	schemaEnd := len(encode(t)) - 8
	for cut := 0; cut < len(data)-8; cut++ {
		got, _, err := readAll(data[:cut])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d of %d: err = %v, want ErrTruncated", cut, len(data), err)
		}
		if cut < schemaEnd {
			continue
		}
		whole := 0
		n := 0
		for i, e := range ends {
			if cut >= e {
				whole = i + 1
				n += bs[i].Len()
			}
		}
		_ = whole
		equalPrefix(t, got, all, n)
	}
	// The last 8 bytes are the end-of-stream marker: a cut inside it is a
	// cut too; the whole stream is clean.
	if _, _, err := readAll(data); err != nil {
		t.Fatal(err)
	}
}

func TestNotATrace(t *testing.T) {
	// An Arrow stream with a different schema.
	var buf bytes.Buffer
	s := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	bld.Append(1)
	col := bld.NewArray()
	rec := array.NewRecord(s, []arrow.Array{col}, 1)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := newStreamReader(bytes.NewReader(buf.Bytes())); err == nil || !strings.Contains(err.Error(), "not a wafl trace") {
		t.Fatalf("foreign schema: %v", err)
	}
	// A future version.
	md := arrow.NewMetadata([]string{MetaVersion}, []string{"99"})
	buf.Reset()
	w = ipc.NewWriter(&buf, ipc.WithSchema(arrow.NewSchema(fields, &md)))
	w.Close()
	if _, err := newStreamReader(bytes.NewReader(buf.Bytes())); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("future version: %v", err)
	}
	if _, err := newStreamReader(strings.NewReader("hello, world, this is not arrow")); err == nil {
		t.Fatal("garbage accepted")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing file: %v", err)
	}
}

func writeRaw(t testing.TB, path string, batches ...*Batch) {
	b := abi.AppendRawHeader(nil)
	for _, bt := range batches {
		var p []byte
		for i := range bt.Len() {
			p = abi.AppendRawEvent(p, bt.Row(i))
		}
		b = appendRawBatch(b, p)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readTraceFile reads the whole Arrow trace at path.
func readTraceFile(t *testing.T, path string) (*Batch, Meta) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, meta, err := readAll(data)
	if err != nil {
		t.Fatal(err)
	}
	return b, meta
}

func TestConvert(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 3))
	bs := []*Batch{randBatch(r, 3000), randBatch(r, 70000), randBatch(r, 5)}
	all := concat(bs)
	raw, out := filepath.Join(dir, "t.raw"), filepath.Join(dir, "t.arrows")
	writeRaw(t, raw, bs...)
	n, err := Convert(raw, out, testMeta)
	if err != nil || n != int64(all.Len()) {
		t.Fatalf("Convert = %d, %v; want %d events", n, err, all.Len())
	}
	got, meta := readTraceFile(t, out)
	if meta.Test != "TestX" {
		t.Fatalf("meta %+v", meta)
	}
	equalPrefix(t, got, all, all.Len())

	// Truncated spill file: the complete batches are converted.
	rawData, _ := os.ReadFile(raw)
	os.WriteFile(raw, rawData[:len(rawData)-3], 0o644)
	n, err = Convert(raw, out, testMeta)
	if !errors.Is(err, ErrTruncated) || n != 73000 {
		t.Fatalf("truncated Convert = %d, %v; want 73000 and ErrTruncated", n, err)
	}
	got, _ = readTraceFile(t, out) // the trace of a truncated spill file is clean
	equalPrefix(t, got, all, 73000)

	if _, err := Convert(filepath.Join(dir, "none"), out, testMeta); err == nil {
		t.Fatal("Convert of a missing file succeeded")
	}
	os.WriteFile(raw, []byte("not a spill file at all"), 0o644)
	if _, err := Convert(raw, out, testMeta); err == nil || !strings.Contains(err.Error(), "not a wafl spill file") {
		t.Fatalf("Convert of garbage: %v", err)
	}
}

func FuzzReader(f *testing.F) {
	r := rand.New(rand.NewPCG(4, 4))
	full := encode(f, randBatch(r, 3), randBatch(r, 2))
	f.Add(full)
	f.Add(full[:len(full)/2])
	f.Add(encode(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := newStreamReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		for rd.Next() {
			b := rd.Batch()
			n := b.Len()
			if len(b.G) != n || len(b.Clock) != n || len(b.Site) != n || len(b.Obj) != n || len(b.Op) != n {
				t.Fatalf("ragged batch")
			}
			for i := range n {
				_ = b.Time[i] + int64(b.G[i]) + int64(b.Clock[i]) + int64(b.Site[i]) + int64(b.Obj[i]) + int64(b.Op[i])
			}
		}
		_ = rd.Err()
		rd.Close()
	})
}

func BenchmarkConvert(b *testing.B) {
	dir := b.TempDir()
	raw, out := filepath.Join(dir, "b.raw"), filepath.Join(dir, "b.arrows")
	const n = 1 << 20
	r := rand.New(rand.NewPCG(5, 5))
	var bs []*Batch
	for range n / 2048 {
		bs = append(bs, randBatch(r, 2048))
	}
	writeRaw(b, raw, bs...)
	b.ReportAllocs()
	b.SetBytes(n * abi.RawRecordSize)
	for b.Loop() {
		if _, err := Convert(raw, out, testMeta); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkRead(b *testing.B) {
	r := rand.New(rand.NewPCG(6, 6))
	var bs []*Batch
	for range 16 {
		bs = append(bs, randBatch(r, 1<<16))
	}
	data := encode(b, bs...)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		rd, err := newStreamReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		var sum uint64
		for rd.Next() {
			for _, g := range rd.Batch().G {
				sum += g
			}
		}
		if rd.Err() != nil {
			b.Fatal(rd.Err())
		}
		rd.Close()
	}
	b.ReportMetric(float64(16<<16)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestLargeBatch covers bodies above exactBody, read in growing chunks.
func TestLargeBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	big := randBatch(r, exactBody/33+1000)
	data := encode(t, randBatch(r, 10), big)
	got, _, err := readAll(data)
	if err != nil {
		t.Fatal(err)
	}
	all := concat([]*Batch{{}, big})
	if got.Len() != 10+big.Len() {
		t.Fatalf("got %d events, want %d", got.Len(), 10+big.Len())
	}
	equalPrefix(t, &Batch{Time: got.Time[10:], G: got.G[10:], Clock: got.Clock[10:], Site: got.Site[10:], Obj: got.Obj[10:], Op: got.Op[10:]}, all, all.Len())
	got, _, err = readAll(data[:len(data)-100])
	if !errors.Is(err, ErrTruncated) || got.Len() != 10 {
		t.Fatalf("cut inside the large batch: %d events, err %v; want 10 and ErrTruncated", got.Len(), err)
	}
}

// TestFieldsFromColumns: the Arrow schema is Columns, type by type.
func TestFieldsFromColumns(t *testing.T) {
	if len(fields) != len(Columns) {
		t.Fatalf("%d fields, %d columns", len(fields), len(Columns))
	}
	for i, c := range Columns {
		ft, ok := fields[i].Type.(arrow.FixedWidthDataType)
		if !ok || fields[i].Name != c.Name || ft.BitWidth() != 8*c.Width {
			t.Errorf("field %d is %s %s, column %+v", i, fields[i].Name, fields[i].Type, c)
		}
	}
}

// appendRawBatch appends a spill-file batch frame around payload, as the
// recorder writes it (abi.PutRawFrameHeader).
func appendRawBatch(b, payload []byte) []byte {
	frame := make([]byte, abi.RawFrameSize+len(payload))
	copy(frame[abi.RawFrameSize:], payload)
	abi.PutRawFrameHeader(frame)
	return append(b, frame...)
}
