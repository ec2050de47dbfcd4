package abi

// Op is the kind of an event. The numeric values are part of the on-disk
// trace format (docs/trace-format.md); never renumber them.
type Op uint8

const (
	OpNone    Op = 0
	OpInit    Op = 1 // a slot goes nil -> non-nil (x.f = v, v != nil; p.Store(v))
	OpUse     Op = 2 // the value in a slot is dereferenced (x.f.g, x.f.M(), x.m[k] = v, x.ch <- v)
	OpDispose Op = 3 // a slot goes non-nil -> nil, or its channel is closed
	OpFork    Op = 4 // an instrumented go statement started a goroutine (trace only)
	// OpCheck: a goroutine has just checked whether an object was disposed
	// (a select case on a channel with a default, a closed flag's load) and
	// may act on the answer (dispose it). The event comes after the check,
	// so a delay there sits between the check and the act.
	OpCheck Op = 5
	// OpTestBegin and OpTestEnd mark a top-level test of a preparation run
	// that runs all tests of a package in one process: g is the test's
	// goroutine, obj the test's id (TestID of its name); OpTestEnd's site
	// is 1 when the test failed. They are in the raw spill file only:
	// wafl splits a package's spill file per test by them (record/split)
	// and drops them, so Arrow traces never hold them.
	OpTestBegin Op = 6
	OpTestEnd   Op = 7
	// OpGo: goroutine g (the parent) executed an instrumented go
	// statement (site: the go statement's site) at its own counter clock,
	// the counter the child's fork row carries: written when the go
	// statement runs, while recording, whether or not the child ever
	// runs. A go row with no fork row of the same (g, clock) is a
	// goroutine that never ran before the recording ended.
	OpGo Op = 8
	// OpThinned: the recorder left out obj use rows since the previous
	// thinned row (or the start), each a use of the same slot at the same
	// site by the same goroutine as one it wrote less than ThinNs before
	// (record's thinning). g and clock are those of the goroutine that
	// wrote the row (a test's goroutine before its end mark; without
	// marks, the one that stopped the recording); site is 0.
	OpThinned Op = 9
	// OpSubtest: goroutine g starts running a subtest (t.Run's function);
	// obj is TestID of its full name (t.Name()). In the raw spill file
	// only: the conversion to Arrow takes from these rows and the fork
	// rows which subtest of the first level each site ran under
	// (trace.Subtests), and drops them.
	OpSubtest Op = 10
)

// NumOps bounds the op codes: every valid Op is below it.
const NumOps = 11

// ThinShift sets the recorder's thinning grain: of the uses of one slot
// at one site by one goroutine, it keeps the first in every aligned
// interval of 1<<ThinShift ns (about 1 ms) and counts the others in
// OpThinned rows. The near-miss window is 100 ms by default and delays are
// at least 1 ms long: a gap measured from the kept rows is off by less
// than a delay's granularity.
const ThinShift = 20

// MaxSite is the largest site id. Site ids are 30-bit hashes
// (instrument/sites.ID) and 0 is "no site"; a row of a sited op whose site
// is above MaxSite is malformed.
const MaxSite = 1<<30 - 1

// FormatVersion is the version of the event format: the op codes, their
// arguments and the raw record layout. It is written into every raw spill
// file header (RawVersion) and every Arrow trace's schema metadata. Bump it
// for any incompatible change, and add a Specs entry for a new op.
const FormatVersion = 1

// Spec describes one kind of event: what each of a row's columns means for
// it. An empty argument name means the column is unused (zero).
type Spec struct {
	Op    Op
	Name  string // as in String
	Obj   string // meaning of the obj column
	Clock string // meaning of the clock column
	Site  string // meaning of the site column
	Doc   string
}

// Specs is the event table, indexed by Op. Every row also has the time (ns,
// monotonic) and the goroutine id g: the goroutine that made the access, or
// for a fork row the parent.
var Specs = [NumOps]Spec{
	OpNone:      {Op: OpNone, Name: "none", Doc: "not an event"},
	OpInit:      {Op: OpInit, Name: "init", Obj: "slot", Clock: "clock", Site: "site", Doc: "a slot goes nil -> non-nil"},
	OpUse:       {Op: OpUse, Name: "use", Obj: "slot", Clock: "clock", Site: "site", Doc: "the value in a slot is (or will be) dereferenced"},
	OpDispose:   {Op: OpDispose, Name: "dispose", Obj: "slot", Clock: "clock", Site: "site", Doc: "a slot goes non-nil -> nil, or its channel is closed"},
	OpCheck:     {Op: OpCheck, Name: "check", Obj: "checked object (channel, flag)", Clock: "clock", Site: "site", Doc: "the goroutine just checked whether the object was disposed and may act on it"},
	OpFork:      {Op: OpFork, Name: "fork", Obj: "child goroutine", Clock: "parent's own counter at the fork", Doc: "goroutine g (the parent) started the child with an instrumented go statement"},
	OpTestBegin: {Op: OpTestBegin, Name: "test-begin", Obj: "test id (TestID)", Clock: "clock", Doc: "raw spill file only: goroutine g starts running a top-level test"},
	OpTestEnd:   {Op: OpTestEnd, Name: "test-end", Obj: "test id (TestID)", Clock: "clock", Site: "1: the test failed", Doc: "raw spill file only: the top-level test of goroutine g and all its subtests ended"},
	OpGo:        {Op: OpGo, Name: "go", Clock: "parent's own counter at the fork (the child's fork row carries it)", Site: "go statement", Doc: "goroutine g (the parent) executed an instrumented go statement; the child may never run"},
	OpThinned:   {Op: OpThinned, Name: "thinned", Obj: "use rows left out", Clock: "clock", Doc: "the recorder left out repeated uses (same goroutine, site and slot, less than 1<<ThinShift ns apart) since the previous thinned row"},
	OpSubtest:   {Op: OpSubtest, Name: "subtest", Obj: "subtest id (TestID of t.Name())", Clock: "clock", Doc: "raw spill file only: goroutine g starts running a subtest"},
}

// Mark reports whether o is a test boundary mark (raw spill file only).
func (o Op) Mark() bool { return o == OpTestBegin || o == OpTestEnd }

// TestID is the id a test boundary mark carries for the top-level test
// name: FNV-1a, 64 bits. The runtime computes it without allocating; wafl
// computes it for the tests it listed.
func TestID(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h
}

// Access reports whether o is a memory access (init, use or dispose).
func (o Op) Access() bool { return o >= OpInit && o <= OpDispose }

// Sited reports whether o happens at a site: an access or a check.
func (o Op) Sited() bool { return o.Access() || o == OpCheck }

func (o Op) String() string {
	if o < NumOps {
		return Specs[o].Name
	}
	return "none"
}
