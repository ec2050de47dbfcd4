package abi

import (
	"encoding/binary"
	"hash/crc32"
	"unsafe"
)

// The raw spill file is what the test binary writes while recording; the
// wafl process reads it (internal/trace.RawReader) and converts it to Arrow IPC. Layout, all
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

// Castagnoli is the CRC-32C table of the batch checksums.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

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

// PutRawFrameHeader fills in the batch header at the start of frame, whose
// first RawFrameSize bytes are reserved and whose remaining bytes are the
// payload.
func PutRawFrameHeader(frame []byte) {
	payload := frame[RawFrameSize:]
	binary.LittleEndian.PutUint32(frame, uint32(len(payload)/RawRecordSize))
	binary.LittleEndian.PutUint32(frame[4:], crc32.Checksum(payload, Castagnoli))
}
