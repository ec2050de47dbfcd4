package analyze

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/internal/trace"
)

// A fuzz input for FuzzAnalyzeRows is a site table of fuzzSites bytes (per
// site: its slot type class, kind and field, which the analysis uses to
// drop pairs of different types and to predict partners), then a sequence
// of 8-byte rows: op, site, goroutine (16 bits), object (16 bits), and the
// time since the previous row in microseconds (16 bits). Goroutines, sites
// and objects are folded into ranges (1024, 128, 16384) that hold the
// shapes of real traces (hundreds of goroutines, dozens of sites,
// thousands of objects).
const (
	fuzzRowSize = 8
	fuzzSites   = 128
)

// fuzzKinds are the site kinds a site byte chooses among.
var fuzzKinds = [8]string{"use", "load", "store", "close", "send", "atomic-load", "atomic-store", "check"}

// decodeFuzzSites makes the analysis's site maps of the site bytes: type
// class b&3 (0: unknown), kind (b>>2)&7, field (b>>5)&3.
func decodeFuzzSites(hdr []byte) (map[uint32]string, map[uint32]SiteInfo) {
	types := map[uint32]string{}
	infos := map[uint32]SiteInfo{}
	for i, b := range hdr {
		id := uint32(i + 1)
		typ := ""
		if b&3 != 0 {
			typ = fmt.Sprintf("*example.com/p.T%d", b&3)
			types[id] = typ
		}
		infos[id] = NewSiteInfo(fuzzKinds[(b>>2)&7], fmt.Sprintf("x.f%d", (b>>5)&3), typ, "/m/p/f.go")
	}
	return types, infos
}

func decodeFuzzRows(data []byte) (rows []row, types map[uint32]string, infos map[uint32]SiteInfo) {
	hdr := make([]byte, fuzzSites)
	data = data[copy(hdr, data):]
	types, infos = decodeFuzzSites(hdr)
	t := int64(0)
	clocks := map[uint64]uint32{}
	for len(data) >= fuzzRowSize {
		b := data[:fuzzRowSize]
		data = data[fuzzRowSize:]
		op := abi.Op(b[0]%uint8(abi.NumOps-1) + 1)
		g := uint64(binary.LittleEndian.Uint16(b[2:])%1024 + 1)
		obj := uint64(binary.LittleEndian.Uint16(b[4:])%16384 + 1)
		t += int64(binary.LittleEndian.Uint16(b[6:])) * 1000
		r := row{t: t, g: g, site: uint32(b[1]%128 + 1), obj: obj * 16, op: op}
		switch op {
		case abi.OpFork:
			// A fork row: g forks the child named by the object field.
			clocks[g]++
			r.clock, r.site, r.obj = clocks[g], 0, obj%1024+1
		case abi.OpTestBegin, abi.OpTestEnd:
			r.site, r.obj = 0, abi.TestID("TestX")
		default:
			r.clock = clocks[g] + 1
		}
		rows = append(rows, r)
	}
	return rows, types, infos
}

// FuzzAnalyzeRows runs the whole analysis over row sequences: no input may
// make it panic (a panic is an *InternalError, which fails here), and a
// plan that comes out is valid. The seeds in testdata/fuzz/FuzzAnalyzeRows
// include the shapes of real traces (TestWriteFuzzSeed), among them the
// one whose interference pass once indexed location -1.
func FuzzAnalyzeRows(f *testing.F) {
	f.Add([]byte{})
	f.Add(append(make([]byte, fuzzSites), encodeFuzzRows(fileRows)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, types, infos := decodeFuzzRows(data)
		for _, delta := range []time.Duration{100 * time.Millisecond, 2 * time.Millisecond} {
			p, _, err := run(context.Background(), source(rows, 7).Opener(), Options{
				MemoryBudget: 1 << 20, TempDir: t.TempDir(), NearMiss: delta,
				SlotTypes: types, Sites: infos,
			}, &tuning{})
			if ie, ok := err.(*InternalError); ok {
				t.Fatalf("analysis panicked: %v\n%s", ie.Value, ie.Stack)
			}
			if err != nil {
				continue
			}
			if err := p.Validate(); err != nil {
				t.Fatalf("invalid plan: %v", err)
			}
		}
	})
}

// encodeFuzzRows is decodeFuzzRows's inverse as far as the folding allows.
func encodeFuzzRows(rows []row) []byte {
	var out []byte
	prev := int64(0)
	for _, r := range rows {
		dt := max(r.t-prev, 0) / 1000
		prev = r.t
		var b [fuzzRowSize]byte
		b[0] = uint8(r.op) - 1
		b[1] = uint8((r.site - 1) % 128)
		binary.LittleEndian.PutUint16(b[2:], uint16((r.g-1)%1024))
		obj := r.obj/16 - 1
		if r.op == abi.OpFork {
			obj = (r.obj + 1022) % 1024 // decodes to r.obj
		}
		binary.LittleEndian.PutUint16(b[4:], uint16(obj%16384))
		binary.LittleEndian.PutUint16(b[6:], uint16(min(dt, 1<<16-1)))
		out = append(out, b[:]...)
	}
	return out
}

// TestWriteFuzzSeed turns a real trace into a FuzzAnalyzeRows seed:
//
//	WAFL_FUZZ_TRACE=path/to/Test.arrows WAFL_FUZZ_SITES=path/to/pkg.sites.json \
//	WAFL_FUZZ_NAME=name go test -run TestWriteFuzzSeed ./analyze
//
// Goroutines, sites and objects are renamed to small indices in order of
// first appearance (the busiest kept apart), times kept, and the first
// 4096 rows in time order written to testdata/fuzz/FuzzAnalyzeRows/name.
// Nothing of the traced program but this shape is kept.
func TestWriteFuzzSeed(t *testing.T) {
	path, name := os.Getenv("WAFL_FUZZ_TRACE"), os.Getenv("WAFL_FUZZ_NAME")
	if path == "" || name == "" {
		t.Skip("WAFL_FUZZ_TRACE, WAFL_FUZZ_SITES and WAFL_FUZZ_NAME name a trace, its site table and the seed to write")
	}
	tab, err := sites.Load(os.Getenv("WAFL_FUZZ_SITES"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := trace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []row
	for r.Next() {
		b := r.Batch()
		for i := range b.Len() {
			rows = append(rows, row{t: b.Time[i], g: b.G[i], clock: b.Clock[i], site: b.Site[i], obj: b.Obj[i], op: abi.Op(b.Op[i])})
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].t < rows[j].t })
	rows = rows[:min(len(rows), 4096)]
	idx := func(m map[uint64]uint64, k uint64) uint64 {
		if v, ok := m[k]; ok {
			return v
		}
		m[k] = uint64(len(m)) + 1
		return m[k]
	}
	gs, sites, objs := map[uint64]uint64{}, map[uint64]uint64{}, map[uint64]uint64{}
	t0 := rows[0].t
	for i := range rows {
		r := &rows[i]
		r.t -= t0
		r.g = idx(gs, r.g)
		switch r.op {
		case abi.OpFork:
			r.obj = idx(gs, r.obj)
		case abi.OpTestBegin, abi.OpTestEnd:
		default:
			r.site = uint32(idx(sites, uint64(r.site)))
			r.obj = idx(objs, r.obj) * 16
		}
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzAnalyzeRows")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The site bytes: types and fields numbered in order of first use.
	hdr := make([]byte, fuzzSites)
	typeClass, fieldClass := map[string]byte{}, map[string]byte{}
	class := func(m map[string]byte, k string, n byte) byte {
		if c, ok := m[k]; ok {
			return c
		}
		m[k] = byte(len(m))%n + 1
		return m[k]
	}
	for real, i := range sites {
		s, ok := tab.Lookup(uint32(real))
		if !ok || i > fuzzSites {
			continue
		}
		var b byte
		if s.Type != "" {
			b = class(typeClass, s.Type, 3)
		}
		for k, name := range fuzzKinds {
			if name == s.Kind {
				b |= byte(k) << 2
			}
		}
		b |= (class(fieldClass, FieldOf(s.Expr), 4) - 1) << 5
		hdr[i-1] = b
	}
	seed := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", append(hdr, encodeFuzzRows(rows)...))
	if err := os.WriteFile(filepath.Join(dir, name), []byte(seed), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d rows, %d goroutines, %d sites, %d objects", filepath.Join(dir, name), len(rows), len(gs), len(sites), len(objs))
}
