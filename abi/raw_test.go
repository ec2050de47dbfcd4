package abi

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"unsafe"
)

func TestRawEventLayout(t *testing.T) {
	if unsafe.Sizeof(RawEvent{}) != RawRecordSize {
		t.Fatalf("sizeof(RawEvent) = %d, record size %d", unsafe.Sizeof(RawEvent{}), RawRecordSize)
	}
	evs := []RawEvent{{Time: -5, G: 6, Obj: 7, Clock: 8, Site: 9, Op: OpDispose}, {Time: 1, G: 2, Obj: 3, Clock: 4, Site: 5, Op: OpUse}}
	var want []byte
	for _, e := range evs {
		want = AppendRawEvent(want, e)
	}
	if got := AppendRawEvents(nil, evs); !bytes.Equal(got, want) {
		t.Fatalf("AppendRawEvents %x, field by field %x", got, want)
	}
	for i, e := range evs {
		if got := DecodeRawEvent(want[i*RawRecordSize:]); got != e {
			t.Fatalf("record %d decodes to %+v, want %+v", i, got, e)
		}
	}
}

func TestPutRawFrameHeader(t *testing.T) {
	evs := []RawEvent{{Time: 1, G: 2, Op: OpInit}, {Time: 2, G: 2, Op: OpUse}}
	frame := AppendRawEvents(make([]byte, RawFrameSize), evs)
	PutRawFrameHeader(frame)
	payload := AppendRawEvents(nil, evs)
	want := binary.LittleEndian.AppendUint32(nil, uint32(len(evs)))
	want = binary.LittleEndian.AppendUint32(want, crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
	want = append(want, payload...)
	if !bytes.Equal(frame, want) {
		t.Fatalf("frame %x, want %x", frame, want)
	}
}
