package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/memorder/wafl/abi"
)

func sampleRaw(t testing.TB, batches ...[]abi.RawEvent) []byte {
	b := abi.AppendRawHeader(nil)
	for _, evs := range batches {
		var p []byte
		for _, e := range evs {
			p = abi.AppendRawEvent(p, e)
		}
		b = appendRawBatch(b, p)
	}
	return b
}

func readAllRaw(data []byte) ([]abi.RawEvent, error) {
	r, err := NewRawReader(bytes.NewReader(data), "test.raw")
	if err != nil {
		return nil, err
	}
	var out []abi.RawEvent
	for r.Next() {
		for i := range r.Len() {
			out = append(out, abi.DecodeRawEvent(r.Payload()[i*abi.RawRecordSize:]))
		}
	}
	return out, r.Err()
}

func TestRawRoundTrip(t *testing.T) {
	b1 := []abi.RawEvent{{Time: 1, G: 2, Obj: 3, Clock: 4, Site: 5, Op: abi.OpInit}, {Time: -7, G: 1<<64 - 1, Obj: 9, Clock: 1<<32 - 1, Site: 11, Op: abi.OpUse}}
	b2 := []abi.RawEvent{{Time: 100, G: 1, Obj: 2, Clock: 1, Op: abi.OpFork}}
	got, err := readAllRaw(sampleRaw(t, b1, b2))
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]abi.RawEvent(nil), b1...), b2...)
	if len(got) != len(want) {
		t.Fatalf("read %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestRawTruncated(t *testing.T) {
	b1 := []abi.RawEvent{{Time: 1, G: 2, Op: abi.OpInit}}
	b2 := []abi.RawEvent{{Time: 2, G: 2, Op: abi.OpUse}, {Time: 3, G: 2, Op: abi.OpUse}}
	data := sampleRaw(t, b1, b2)
	whole := len(sampleRaw(t, b1))
	for cut := whole + 1; cut < len(data); cut++ {
		got, err := readAllRaw(data[:cut])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: err = %v, want ErrTruncated", cut, err)
		}
		if len(got) != 1 || got[0] != b1[0] {
			t.Fatalf("cut at %d: got %+v, want the first batch", cut, got)
		}
	}
	// A cut at a batch boundary is a valid, shorter file.
	if got, err := readAllRaw(data[:whole]); err != nil || len(got) != 1 {
		t.Fatalf("cut at boundary: %v, %d events", err, len(got))
	}
	for cut := range abi.RawHeaderSize {
		if _, err := readAllRaw(data[:cut]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("header cut at %d: err = %v, want ErrTruncated", cut, err)
		}
	}
}

func TestRawCorrupt(t *testing.T) {
	data := sampleRaw(t, []abi.RawEvent{{Time: 1, G: 2, Op: abi.OpInit}}, []abi.RawEvent{{Time: 2, G: 3, Op: abi.OpUse}})
	bad := bytes.Clone(data)
	bad[len(bad)-5] ^= 0xff // inside the second payload
	got, err := readAllRaw(bad)
	if !errors.Is(err, ErrCorrupt) || len(got) != 1 {
		t.Fatalf("corrupt payload: %d events, err %v; want 1 event and ErrCorrupt", len(got), err)
	}
	for _, tc := range []struct {
		mutate func([]byte)
		want   string
	}{
		{func(b []byte) { b[0] = 'X' }, "not a wafl spill file"},
		{func(b []byte) { b[8] = 9 }, "version 9"},
		{func(b []byte) { b[12] = 41 }, "record size 41"},
		{func(b []byte) { b[abi.RawHeaderSize] = 0; b[abi.RawHeaderSize+1] = 0 }, "claims 0 records"},
	} {
		b := bytes.Clone(data)
		tc.mutate(b)
		_, err := readAllRaw(b)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test.raw") {
			t.Errorf("error %v, want it to name test.raw and say %q", err, tc.want)
		}
	}
}

func FuzzRawReader(f *testing.F) {
	f.Add(sampleRaw(f, []abi.RawEvent{{Time: 1, G: 2, Obj: 3, Clock: 4, Site: 5, Op: abi.OpUse}}))
	f.Add(sampleRaw(f))
	f.Add([]byte(abi.RawMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewRawReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for r.Next() {
			if len(r.Payload()) != r.Len()*abi.RawRecordSize {
				t.Fatalf("payload %d bytes for %d records", len(r.Payload()), r.Len())
			}
			for i := range r.Len() {
				abi.DecodeRawEvent(r.Payload()[i*abi.RawRecordSize:])
			}
		}
		_ = r.Err()
	})
}
