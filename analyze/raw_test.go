package analyze

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/plans"
)

// writeSpill writes the synthetic trace of cfg as a recorder spill file:
// frames of 2048 rows, the recorder's buffer size, with a test boundary
// mark in the first.
func writeSpill(t *testing.T, path string, cfg synthConfig) {
	t.Helper()
	out := abi.AppendRawHeader(nil)
	frame := func(evs []abi.RawEvent) {
		enc := abi.AppendRawEvents(make([]byte, abi.RawFrameSize), evs)
		abi.PutRawFrameHeader(enc)
		out = append(out, enc...)
	}
	evs := []abi.RawEvent{{G: synthRoot, Obj: abi.TestID("TestSynth"), Clock: 1, Op: abi.OpTestBegin}}
	err := synthGenerate(cfg, func(b *trace.Batch) error {
		for i := range b.Len() {
			evs = append(evs, b.Row(i))
			if len(evs) == 2048 {
				frame(evs)
				evs = evs[:0]
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	frame(evs)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// planJSON is p without the fields that name the trace file or the time
// of the analysis, and whether the trace was cut (a conversion writes a
// whole Arrow file of a cut spill file's rows).
func planJSON(t *testing.T, p *plans.Plan) string {
	t.Helper()
	q := *p
	q.Provenance.Trace, q.Provenance.Created, q.Provenance.Truncated = "", "", false
	b, err := json.Marshal(&q)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRawSameAsFile: analyzing a spill file as it is (Raw) gives the plan
// that converting it to Arrow first (trace.ConvertWithout) and analyzing
// that (File) gives, pauses taken out of the times either way; and a
// spill file cut inside a frame gives the plan of its prefix, as its
// conversion does.
func TestRawSameAsFile(t *testing.T) {
	dir := t.TempDir()
	raw, arrows := filepath.Join(dir, "t.wraw"), filepath.Join(dir, "t.arrows")
	writeSpill(t, raw, synthConfig{Events: 100_000, Seed: 7})
	meta := trace.Meta{Version: abi.FormatVersion, Package: "example.com/p", Test: "TestSynth"}
	pauses := trace.NewPauses([][2]int64{{10_000_000, 14_000_000}, {30_000_000, 31_000_000}})
	opts := Options{TempDir: dir, BinaryHash: "sha256:x"}
	check := func(what string) {
		t.Helper()
		if _, err := trace.ConvertWithout(raw, arrows, meta, pauses); err != nil && !IsTruncated(err) {
			t.Fatal(err)
		}
		want, wst, err := File(context.Background(), arrows, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, gst, err := Raw(context.Background(), raw, meta, pauses, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Locations) == 0 {
			t.Fatalf("%s: the synthetic trace gives no candidate", what)
		}
		if g, w := planJSON(t, got), planJSON(t, want); g != w {
			t.Errorf("%s: Raw's plan differs from File's\n got %.600s\nwant %.600s", what, g, w)
		}
		if gst.Events != wst.Events {
			t.Errorf("%s: Raw read %d events, File %d", what, gst.Events, wst.Events)
		}
		if cut := what == "cut file"; got.Provenance.Truncated != cut {
			t.Errorf("%s: Raw's plan says truncated %v", what, got.Provenance.Truncated)
		}
	}
	check("whole file")
	data, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raw, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	check("cut file")
}
