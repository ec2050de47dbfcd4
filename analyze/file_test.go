package analyze

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/memorder/wafl/internal/trace"
)

// writeTrace writes rows as an Arrow IPC trace, batchSize rows a batch.
func writeTrace(t testing.TB, w io.Writer, meta trace.Meta, rows []row, batchSize int) {
	t.Helper()
	tw, err := trace.NewWriter(w, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range source(rows, batchSize).Batches {
		if err := tw.Write(&c); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

var fileRows = []row{
	forkAt(0, 1, 1, 2),
	initAt(1*ms, 1, 2, 10, 0xA),
	useAt(3*ms, 2, 1, 20, 0xA),
	useAt(4*ms, 2, 1, 21, 0xB),
	disposeAt(6*ms, 1, 2, 30, 0xB),
}

func TestBugFileEndToEnd(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pkg.test")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "TestX.arrows")
	var buf bytes.Buffer
	writeTrace(t, &buf, trace.Meta{Package: "example.com/m", Test: "TestX", Binary: bin, Sites: "pkg.sites.json"}, fileRows, 2)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p, st, err := File(context.Background(), path, Options{Tool: "wafl test"})
	if err != nil {
		t.Fatal(err)
	}
	wantPairs(t, p, "use-before-init 10→20", "use-after-dispose 21→30")
	pv := p.Provenance
	if pv.Package != "example.com/m" || pv.Test != "TestX" || pv.Trace != path || pv.Binary != bin ||
		pv.Sites != "pkg.sites.json" || pv.Tool != "wafl test" || pv.Events != 5 ||
		pv.BinaryHash != fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("binary"))) {
		t.Fatalf("provenance %+v", pv)
	}
	if st.Passes != 1 || !st.Streamed || st.Events != 5 || st.Forks != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFileTruncatedTraceAnalyzesPrefix(t *testing.T) {
	var buf bytes.Buffer
	rows := append(append([]row{}, fileRows...), useAt(7*ms, 3, 1, 22, 0xC), useAt(8*ms, 3, 1, 22, 0xC))
	writeTrace(t, &buf, trace.Meta{Test: "TestX"}, rows, 5)
	data := buf.Bytes()
	// Cut inside the second batch (and drop the end-of-stream marker).
	path := filepath.Join(t.TempDir(), "cut.arrows")
	if err := os.WriteFile(path, data[:len(data)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	p, st, err := File(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantPairs(t, p, "use-before-init 10→20", "use-after-dispose 21→30")
	if !st.Truncated || !p.Provenance.Truncated || len(st.Warnings) == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFileErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.arrows")
	os.WriteFile(bad, []byte("this is not an arrow stream"), 0o644)
	for _, path := range []string{bad, filepath.Join(dir, "missing.arrows")} {
		_, _, err := File(context.Background(), path, Options{})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want an error naming the file", path, err)
		}
	}
}

// FuzzAnalyzeTraceBytes feeds arbitrary bytes, as a trace file, through
// the trace reader and the whole analysis: errors are fine, panics are
// not, and a plan that comes out is valid.
func FuzzAnalyzeTraceBytes(f *testing.F) {
	var buf bytes.Buffer
	writeTrace(f, &buf, trace.Meta{Test: "TestX"}, fileRows, 2)
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:len(good)-8])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "fuzz.arrows")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, _, err := File(context.Background(), path, Options{MemoryBudget: 1, TempDir: dir})
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("invalid plan from fuzz input: %v", err)
		}
	})
}

// TestSmallTraceAllocatesLittle: prepare analyzes one trace per test,
// most of a few events, so the analysis of a short trace must not
// allocate buffers sized for millions of rows (it did: 3.5 MB for five
// rows). The least of five runs, to keep other goroutines' allocations
// out.
func TestSmallTraceAllocatesLittle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "TestX.arrows")
	var buf bytes.Buffer
	writeTrace(t, &buf, trace.Meta{Package: "example.com/m", Test: "TestX"}, fileRows, 2)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	least := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, _, err := File(context.Background(), path, Options{Tool: "wafl test", BinaryHash: "sha256:x"})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		wantPairs(t, p, "use-before-init 10→20", "use-after-dispose 21→30")
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	t.Logf("%d bytes allocated", least)
	if least > 512<<10 {
		t.Fatalf("the analysis of a 5-row trace allocated %d KiB, want at most 512", least>>10)
	}
}
