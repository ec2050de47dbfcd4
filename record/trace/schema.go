package trace

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/memorder/wafl/record"
)

// SchemaVersion is the version of the trace schema, stored in the schema
// metadata under MetaVersion. Bump it for any incompatible change.
const SchemaVersion = 1

// Schema metadata keys.
const (
	MetaVersion = "wafl.trace.version"
	MetaPackage = "wafl.package" // import path of the package under test
	MetaTest    = "wafl.test"    // test name
	MetaBinary  = "wafl.binary"  // path of the instrumented test binary
	MetaSites   = "wafl.sites"   // path of the site table (instrument/sites)
)

// ErrTruncated is wrapped by errors about streams and spill files that end
// before their end: every batch before the cut was delivered. It is the
// same value as record.ErrTruncated.
var ErrTruncated = record.ErrTruncated

// Meta describes a trace. Version is the schema version (SchemaVersion
// when read; ignored when writing, which always writes SchemaVersion).
type Meta struct {
	Version int
	Package string
	Test    string
	Binary  string
	Sites   string
}

// Column names and order.
const (
	ColTime  = "time"
	ColG     = "g"
	ColClock = "clock"
	ColSite  = "site"
	ColObj   = "obj"
	ColOp    = "op"
)

var fields = []arrow.Field{
	{Name: ColTime, Type: arrow.PrimitiveTypes.Int64},
	{Name: ColG, Type: arrow.PrimitiveTypes.Uint64},
	{Name: ColClock, Type: arrow.PrimitiveTypes.Uint32},
	{Name: ColSite, Type: arrow.PrimitiveTypes.Uint32},
	{Name: ColObj, Type: arrow.PrimitiveTypes.Uint64},
	{Name: ColOp, Type: arrow.PrimitiveTypes.Uint8},
}

func schemaFor(m Meta) *arrow.Schema {
	md := arrow.NewMetadata(
		[]string{MetaVersion, MetaPackage, MetaTest, MetaBinary, MetaSites},
		[]string{strconv.Itoa(SchemaVersion), m.Package, m.Test, m.Binary, m.Sites},
	)
	return arrow.NewSchema(fields, &md)
}

// checkSchema validates a schema read from a stream and returns its Meta.
func checkSchema(s *arrow.Schema) (Meta, error) {
	md := s.Metadata()
	get := func(k string) string {
		if i := md.FindKey(k); i >= 0 {
			return md.Values()[i]
		}
		return ""
	}
	vs := get(MetaVersion)
	if vs == "" {
		return Meta{}, fmt.Errorf("not a wafl trace: schema metadata has no %s", MetaVersion)
	}
	v, err := strconv.Atoi(vs)
	if err != nil {
		return Meta{}, fmt.Errorf("bad %s %q", MetaVersion, vs)
	}
	if v != SchemaVersion {
		return Meta{}, fmt.Errorf("trace schema version %d, this wafl reads version %d", v, SchemaVersion)
	}
	if s.NumFields() != len(fields) {
		return Meta{}, fmt.Errorf("trace has %d columns, want %d", s.NumFields(), len(fields))
	}
	for i, f := range fields {
		g := s.Field(i)
		if g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
			return Meta{}, fmt.Errorf("trace column %d is %s %s, want %s %s", i, g.Name, g.Type, f.Name, f.Type)
		}
	}
	return Meta{Version: v, Package: get(MetaPackage), Test: get(MetaTest), Binary: get(MetaBinary), Sites: get(MetaSites)}, nil
}

// Batch is a batch of events as column slices, all of the same length.
// Returned by Reader.Batch, the slices alias Arrow memory and are valid
// until the next call to Next.
type Batch struct {
	Time  []int64
	G     []uint64
	Clock []uint32
	Site  []uint32
	Obj   []uint64
	Op    []uint8
}

// Len returns the number of events in the batch.
func (b *Batch) Len() int { return len(b.Time) }

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

func (b *Batch) check() error {
	n := len(b.Time)
	if len(b.G) != n || len(b.Clock) != n || len(b.Site) != n || len(b.Obj) != n || len(b.Op) != n {
		return fmt.Errorf("batch columns differ in length: time %d, g %d, clock %d, site %d, obj %d, op %d",
			n, len(b.G), len(b.Clock), len(b.Site), len(b.Obj), len(b.Op))
	}
	return nil
}
