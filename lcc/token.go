package lcc

// Token carries the parent's logical call context to a child goroutine.
type Token struct {
	Parent uint64 // parent goroutine id; 0: no context
	Clock  uint32 // parent's own counter at the fork
}
