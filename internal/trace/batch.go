package trace

import (
	"fmt"

	"github.com/memorder/wafl/abi"
)

// Column describes one trace column: its name (the Arrow field name), the
// byte width of one value and whether the value is a signed integer.
type Column struct {
	Name   string
	Width  int
	Signed bool
}

// Columns is the column table of a trace, in column order: the order of
// Batch's fields, of the Arrow schema (record/trace) and of
// docs/trace-format.md's event table. The Arrow field types and the
// widths the trace reader checks are derived from it.
var Columns = [...]Column{
	{Name: "time", Width: 8, Signed: true},
	{Name: "g", Width: 8},
	{Name: "clock", Width: 4},
	{Name: "site", Width: 4},
	{Name: "obj", Width: 8},
	{Name: "op", Width: 1},
}

// Batch is a batch of events as column slices, one per trace column (in
// the order of Columns), all of the same length. It is the one batch type of wafl: the Arrow reader
// returns it (its slices then alias Arrow memory, valid until the reader's
// next Next), the analyzer consumes it and the synthetic trace generator
// produces it.
type Batch struct {
	Time  []int64
	G     []uint64
	Clock []uint32
	Site  []uint32
	Obj   []uint64
	Op    []uint8
}

// Len returns the number of complete rows: the length of the shortest
// column (all columns have the same length in a checked batch).
func (b *Batch) Len() int {
	return min(len(b.Time), len(b.G), len(b.Clock), len(b.Site), len(b.Obj), len(b.Op))
}

// Reset empties the batch, keeping the slices' capacity.
func (b *Batch) Reset() {
	b.Time, b.G, b.Clock, b.Site, b.Obj, b.Op = b.Time[:0], b.G[:0], b.Clock[:0], b.Site[:0], b.Obj[:0], b.Op[:0]
}

// Append appends one event.
func (b *Batch) Append(time int64, g uint64, clock, site uint32, obj uint64, op uint8) {
	b.Time = append(b.Time, time)
	b.G = append(b.G, g)
	b.Clock = append(b.Clock, clock)
	b.Site = append(b.Site, site)
	b.Obj = append(b.Obj, obj)
	b.Op = append(b.Op, op)
}

// AppendRaw appends one decoded raw record.
func (b *Batch) AppendRaw(e abi.RawEvent) {
	b.Append(e.Time, e.G, e.Clock, e.Site, e.Obj, uint8(e.Op))
}

// Row returns row i as a raw record.
func (b *Batch) Row(i int) abi.RawEvent {
	return abi.RawEvent{Time: b.Time[i], G: b.G[i], Obj: b.Obj[i], Clock: b.Clock[i], Site: b.Site[i], Op: abi.Op(b.Op[i])}
}

// Check reports columns of different lengths.
func (b *Batch) Check() error {
	n := len(b.Time)
	if len(b.G) != n || len(b.Clock) != n || len(b.Site) != n || len(b.Obj) != n || len(b.Op) != n {
		return fmt.Errorf("batch columns differ in length: time %d, g %d, clock %d, site %d, obj %d, op %d",
			n, len(b.G), len(b.Clock), len(b.Site), len(b.Obj), len(b.Op))
	}
	return nil
}

// CopyFrom makes b a copy of src's rows, reusing b's capacity.
func (b *Batch) CopyFrom(src *Batch) {
	b.Time = append(b.Time[:0], src.Time...)
	b.G = append(b.G[:0], src.G...)
	b.Clock = append(b.Clock[:0], src.Clock...)
	b.Site = append(b.Site[:0], src.Site...)
	b.Obj = append(b.Obj[:0], src.Obj...)
	b.Op = append(b.Op[:0], src.Op...)
}
