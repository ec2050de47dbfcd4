//go:build !unix

package analyze

// offHeap returns make([]T, n): outside Unix the tables stay on the heap.
func offHeap[T any](n int) ([]T, []byte) { return make([]T, n), nil }

func freeOffHeap(mem []byte) {}
