package trace

import (
	"encoding/binary"
	"unsafe"
)

// nativeLE reports whether this machine stores integers little-endian, as
// Arrow IPC streams written by wafl do: then a column's bytes are its
// values and the batch can alias the message body.
var nativeLE = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// decodeBatch sets out's columns to the rows of the record batch whose
// body is body and whose layout checkMessage stored in rb (every buffer
// inside body, each long enough for rb.rows rows). The columns alias body
// when the machine is little-endian and the buffers are aligned (as the
// Arrow IPC format pads them); otherwise they are decoded into own, whose
// slices are reused from batch to batch. Nothing is allocated once the
// buffers have grown to the batch size.
func decodeBatch(out, own *Batch, body []byte, rb *recBatch) {
	n := int(rb.rows)
	col := func(i int) []byte {
		o := rb.data[i][0]
		return body[o : o+int64(n*Columns[i].Width)]
	}
	if nativeLE && aligned(body, rb) {
		*out = Batch{
			Time:  view[int64](col(0), n),
			G:     view[uint64](col(1), n),
			Clock: view[uint32](col(2), n),
			Site:  view[uint32](col(3), n),
			Obj:   view[uint64](col(4), n),
			Op:    col(5)[:n:n],
		}
		return
	}
	own.Time, own.G, own.Clock = grow(own.Time, n), grow(own.G, n), grow(own.Clock, n)
	own.Site, own.Obj, own.Op = grow(own.Site, n), grow(own.Obj, n), grow(own.Op, n)
	t, g, cl, s, o := col(0), col(1), col(2), col(3), col(4)
	for i := range n {
		own.Time[i] = int64(binary.LittleEndian.Uint64(t[8*i:]))
		own.G[i] = binary.LittleEndian.Uint64(g[8*i:])
		own.Clock[i] = binary.LittleEndian.Uint32(cl[4*i:])
		own.Site[i] = binary.LittleEndian.Uint32(s[4*i:])
		own.Obj[i] = binary.LittleEndian.Uint64(o[8*i:])
	}
	copy(own.Op, col(5))
	*out = *own
}

// aligned reports whether every column of the batch starts at an address
// aligned for its element type.
func aligned(body []byte, rb *recBatch) bool {
	if len(body) == 0 {
		return true
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(body)))
	for i, c := range Columns {
		if (base+uintptr(rb.data[i][0]))%uintptr(c.Width) != 0 {
			return false
		}
	}
	return true
}

// view returns the n values of type T stored in b (len(b) ≥ n·size(T),
// suitably aligned), without copying.
func view[T int64 | uint64 | uint32](b []byte, n int) []T {
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
