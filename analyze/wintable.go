package analyze

import (
	"cmp"
	"slices"
)

// winTable holds the interference windows of the pair instances in S per
// (ℓ1, goroutine of ℓ2) — what pass 3 needs (interfere.go) — on the pair
// pass's hot path: an open-addressing table keyed by (ℓ1, g) over 16-byte
// slots (no pointers), the current interval of each key in a dense slice,
// and the intervals a key retired in fixed-size chunks shared by all keys.
// A key's current interval absorbs every window overlapping it; the
// others retire it. Pass 3 takes the union of a key's intervals (sorted
// and merged again), so merging across the pairs of one ℓ1, and in any
// order, gives the same windows as merging per pair.
//
// It replaced a slice of windows per pair searched linearly for the
// goroutine, and a growing slice per (pair, goroutine) for the retired
// intervals: on the 50M-event benchmark that was a quarter of the pair
// pass (docs/benchmarks-analyze.md).
type winTable struct {
	slots []winSlot
	mask  uint64
	keys  []ivKey    // by id
	cur   []interval // by id
	// retired intervals in chunks of winChunk
	chunks [][]retiredIv
}

type winSlot struct {
	g     uint64
	first uint32
	id    int32 // id+1; 0: empty
}

type retiredIv struct {
	id int32
	iv interval
}

const winChunk = 1 << 14

func newWinTable() *winTable {
	return &winTable{slots: make([]winSlot, 1<<10), mask: 1<<10 - 1}
}

func winHash(first uint32, g uint64) uint64 {
	return mix(g ^ uint64(first)*0x9E3779B97F4A7C15)
}

// add adds the window iv of goroutine g under ℓ1 = first and returns the
// key's id, with which addID adds further windows of the same key.
func (w *winTable) add(first uint32, g uint64, iv interval) int32 {
	h := winHash(first, g) & w.mask
	for {
		s := &w.slots[h]
		if s.id == 0 {
			break
		}
		if s.g == g && s.first == first {
			w.addID(s.id-1, iv)
			return s.id - 1
		}
		h = (h + 1) & w.mask
	}
	w.keys = append(w.keys, ivKey{first: first, g: g})
	w.cur = append(w.cur, iv)
	id := int32(len(w.keys))
	w.slots[h] = winSlot{g: g, first: first, id: id}
	if 2*len(w.keys) > len(w.slots) {
		w.grow()
	}
	return id - 1
}

// addID adds the window iv to the key of the given id.
func (w *winTable) addID(id int32, iv interval) {
	c := &w.cur[id]
	if iv.lo <= c.hi && iv.hi >= c.lo {
		c.lo = min(c.lo, iv.lo)
		c.hi = max(c.hi, iv.hi)
		return
	}
	w.retire(id, *c)
	*c = iv
}

func (w *winTable) retire(id int32, iv interval) {
	k := len(w.chunks) - 1
	if k < 0 || len(w.chunks[k]) == cap(w.chunks[k]) {
		w.chunks = append(w.chunks, make([]retiredIv, 0, winChunk))
		k++
	}
	w.chunks[k] = append(w.chunks[k], retiredIv{id, iv})
}

func (w *winTable) grow() {
	old := w.slots
	w.slots = make([]winSlot, 2*len(old))
	w.mask = uint64(len(w.slots) - 1)
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		h := winHash(s.first, s.g) & w.mask
		for w.slots[h].id != 0 {
			h = (h + 1) & w.mask
		}
		w.slots[h] = s
	}
}

// merge adds every window of o to w.
func (w *winTable) merge(o *winTable) {
	for id, k := range o.keys {
		w.add(k.first, k.g, o.cur[id])
	}
	for _, c := range o.chunks {
		for _, r := range c {
			k := o.keys[r.id]
			w.add(k.first, k.g, r.iv)
		}
	}
}

// counts calls fn with every key and the number of its intervals before
// merging (each gives at most that many).
func (w *winTable) counts(fn func(k ivKey, n int)) {
	n := make([]int32, len(w.keys))
	for _, c := range w.chunks {
		for _, r := range c {
			n[r.id]++
		}
	}
	for id, k := range w.keys {
		fn(k, int(n[id])+1)
	}
}

// each calls fn with every key and the union of its windows as disjoint
// intervals sorted by start, keys in the order they were first added. It
// empties w.
func (w *winTable) each(fn func(k ivKey, ivs []interval)) {
	n := len(w.keys)
	// counting sort of the intervals by key
	start := make([]int32, n+1)
	for _, c := range w.chunks {
		for _, r := range c {
			start[r.id+1]++
		}
	}
	for i := range n {
		start[i+1] += start[i] + 1 // + the current interval
	}
	all := make([]interval, start[n])
	fill := slices.Clone(start[:n])
	for id, iv := range w.cur {
		all[fill[id]] = iv
		fill[id]++
	}
	for _, c := range w.chunks {
		for _, r := range c {
			all[fill[r.id]] = r.iv
			fill[r.id]++
		}
	}
	w.slots, w.cur, w.chunks = nil, nil, nil
	for id, k := range w.keys {
		ivs := all[start[id]:start[id+1]]
		slices.SortFunc(ivs, func(x, y interval) int { return cmp.Compare(x.lo, y.lo) })
		out := ivs[:1]
		for _, iv := range ivs[1:] {
			if c := &out[len(out)-1]; iv.lo <= c.hi {
				c.hi = max(c.hi, iv.hi)
				continue
			}
			out = append(out, iv)
		}
		fn(k, out)
	}
	w.keys = nil
}
