package lcc

import (
	"sync"
	"sync/atomic"

	"github.com/petermattis/goid"
)

// Goid returns the id of the calling goroutine (the number runtime.Stack
// prints after "goroutine ").
func Goid() uint64 { return uint64(goid.Get()) }

// enabled is set once the runtime is active (record or detect mode). While
// it is false Fork returns the zero Token and Adopt ignores it.
var enabled atomic.Bool

// Enable turns clock tracking on. Package record calls it when WAFL_MODE
// selects a mode (record or detect).
func Enable() { enabled.Store(true) }

// Disable turns clock tracking off again; counters are kept. Meant for
// tests and benchmarks.
func Disable() { enabled.Store(false) }

// The counter table. A goroutine's own counter is 1 + the value stored in
// its entry, so that a goroutine that never forked needs no entry at all and
// an absent chunk reads as clock 1. Entries are indexed directly by goid:
// dir[goid>>chunkBits][goid&chunkMask]. Only the owning goroutine reads or
// writes its entry; chunks are published by CAS. Goroutine ids beyond the
// directory (more than 1<<(dirBits+chunkBits) goroutines in one process)
// fall back to a mutex-protected map. Memory: 16 KiB per block of 4096
// goroutine ids in which some goroutine forked.
const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
	chunkMask = chunkSize - 1
	dirBits   = 14 // 2^26 goroutines before the fallback; the directory is 128 KiB that the GC scans
	dirSize   = 1 << dirBits
)

type chunk [chunkSize]uint32

var (
	dir        [dirSize]atomic.Pointer[chunk]
	overflowMu sync.Mutex
	overflow   map[uint64]uint32
)

// slot returns the entry of goroutine g, allocating its chunk on first use
// if create is set. It returns nil for an absent entry when create is false.
func slot(g uint64, create bool) *uint32 {
	i := g >> chunkBits
	if i >= dirSize {
		return nil
	}
	c := dir[i].Load()
	if c == nil {
		if !create {
			return nil
		}
		c = new(chunk)
		if !dir[i].CompareAndSwap(nil, c) {
			c = dir[i].Load()
		}
	}
	return &c[g&chunkMask]
}

// clockOf returns goroutine g's own counter. Only g itself may call it.
func clockOf(g uint64) uint32 {
	if p := slot(g, false); p != nil {
		return *p + 1
	}
	if g>>chunkBits < dirSize {
		return 1
	}
	overflowMu.Lock()
	c := overflow[g] + 1
	overflowMu.Unlock()
	return c
}

// advance increments g's own counter and returns its value before the
// increment. Only g itself may call it.
func advance(g uint64) uint32 {
	if p := slot(g, true); p != nil {
		c := *p + 1
		*p = c
		return c
	}
	overflowMu.Lock()
	if overflow == nil {
		overflow = make(map[uint64]uint32)
	}
	c := overflow[g] + 1
	overflow[g] = c
	overflowMu.Unlock()
	return c
}

// Current returns the calling goroutine's id and own counter, the logical
// time of an event it performs now.
func Current() (g uint64, clock uint32) {
	g = Goid()
	return g, clockOf(g)
}

// Fork is the parent side of an instrumented go statement. It returns the
// token the child passes to Adopt: the parent's id and its counter before
// the fork; the parent's counter then advances, so the parent's later
// events are not ordered before the child's. When tracking is off it
// returns the zero Token.
func Fork() Token {
	if !enabled.Load() {
		return Token{}
	}
	return fork()
}

func fork() Token {
	g := Goid()
	return Token{Parent: g, Clock: advance(g)}
}

// Adopt is the first thing a child goroutine does. It returns the child's
// goroutine id and the fork edge, or ok=false when the token is empty
// (tracking was off at the fork, or the go statement was not instrumented).
// A child's own counter starts at 1, so adopting needs no state: the edge is
// all an offline Forest needs, and the caller (package record) writes it.
func Adopt(t Token) (e Edge, ok bool) {
	if t.Parent == 0 {
		return Edge{}, false
	}
	return Edge{Parent: t.Parent, Clock: t.Clock, Child: Goid()}, true
}

// Edge is a fork edge: goroutine Parent started Child when Parent's own
// counter was Clock.
type Edge struct {
	Parent uint64
	Clock  uint32
	Child  uint64
}

// Event is the logical time of an event: the goroutine that performed it
// and that goroutine's own counter at the time.
type Event struct {
	G     uint64
	Clock uint32
}
