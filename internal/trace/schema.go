package trace

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/memorder/wafl/abi"
)

// Schema metadata keys.
const (
	MetaVersion = "wafl.trace.version" // abi.FormatVersion; readers reject others
	MetaPackage = "wafl.package"       // import path of the package under test
	MetaTest    = "wafl.test"          // test name
	MetaBinary  = "wafl.binary"        // path of the instrumented test binary
	MetaSites   = "wafl.sites"         // path of the site table (instrument/sites)
)

// Meta describes a trace. Version is the event format version
// (abi.FormatVersion when read; ignored when writing, which always writes
// abi.FormatVersion).
type Meta struct {
	Version int
	Package string
	Test    string
	Binary  string
	Sites   string
}

// fields are the Arrow schema's fields: Columns, each an integer of
// the column's width and signedness.
var fields = func() []arrow.Field {
	fs := make([]arrow.Field, len(Columns))
	for i, c := range Columns {
		fs[i] = arrow.Field{Name: c.Name, Type: arrowType(c)}
	}
	return fs
}()

func arrowType(c Column) arrow.DataType {
	switch {
	case c.Width == 8 && c.Signed:
		return arrow.PrimitiveTypes.Int64
	case c.Width == 8:
		return arrow.PrimitiveTypes.Uint64
	case c.Width == 4 && c.Signed:
		return arrow.PrimitiveTypes.Int32
	case c.Width == 4:
		return arrow.PrimitiveTypes.Uint32
	case c.Width == 1 && !c.Signed:
		return arrow.PrimitiveTypes.Uint8
	}
	panic(fmt.Sprintf("trace: no Arrow type for column %+v", c))
}

func schemaFor(m Meta) *arrow.Schema {
	md := arrow.NewMetadata(
		[]string{MetaVersion, MetaPackage, MetaTest, MetaBinary, MetaSites},
		[]string{strconv.Itoa(abi.FormatVersion), m.Package, m.Test, m.Binary, m.Sites},
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
	if v != abi.FormatVersion {
		return Meta{}, fmt.Errorf("trace schema version %d, this wafl reads version %d", v, abi.FormatVersion)
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
