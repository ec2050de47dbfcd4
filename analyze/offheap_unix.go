//go:build unix

package analyze

import (
	"syscall"
	"unsafe"
)

// offHeap returns a zeroed slice of n Ts in memory mapped outside the Go
// heap, and the mapping to release with freeOffHeap. T must not contain
// pointers. The analyzer keeps its largest per-object tables there: the
// garbage collector sizes the heap at twice its live data, and decoding
// the trace produces garbage fast, so tables on the heap would cost twice
// their size in peak memory. If the mapping fails, the slice is an
// ordinary one.
func offHeap[T any](n int) ([]T, []byte) {
	var zero T
	size := int(unsafe.Sizeof(zero)) * n
	if n == 0 || size < 1<<20 {
		return make([]T, n), nil
	}
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]T, n), nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&mem[0])), n), mem
}

// freeOffHeap releases a mapping from offHeap (nil: nothing to do). The
// slice made from it must not be used afterwards.
func freeOffHeap(mem []byte) {
	if mem != nil {
		syscall.Munmap(mem)
	}
}
