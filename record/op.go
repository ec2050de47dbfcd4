package record

// Op is the kind of a MEMORDER event. The numeric values are part of the
// on-disk trace format (docs/trace-format.md); never renumber them.
type Op uint8

const (
	OpNone    Op = 0
	OpInit    Op = 1 // a slot goes nil -> non-nil (x.f = v, v != nil; p.Store(v))
	OpUse     Op = 2 // the value in a slot is dereferenced (x.f.g, x.f.M(), x.m[k] = v, x.ch <- v)
	OpDispose Op = 3 // a slot goes non-nil -> nil, or its channel is closed
	OpFork    Op = 4 // an instrumented go statement started a goroutine (trace only)
)

func (o Op) String() string {
	switch o {
	case OpInit:
		return "init"
	case OpUse:
		return "use"
	case OpDispose:
		return "dispose"
	case OpFork:
		return "fork"
	}
	return "none"
}
