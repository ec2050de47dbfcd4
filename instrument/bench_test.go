package instrument_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/memorder/wafl/instrument"
)

// BenchmarkInstrumentXSync measures rewriting golang.org/x/sync v0.10.0
// (every package with its tests) after package loading: type-based site
// selection, dst rewriting and printing. Writing the files is the
// builder's.
func BenchmarkInstrumentXSync(b *testing.B) {
	cmd := exec.Command("go", "mod", "download", "-json", "golang.org/x/sync@v0.10.0")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	cmd.Dir = b.TempDir()
	out, err := cmd.Output()
	var info struct{ Dir string }
	if err != nil || json.Unmarshal(out, &info) != nil || info.Dir == "" {
		b.Skipf("cannot download golang.org/x/sync (no module proxy?): %v\n%s", err, out)
	}
	units := loadUnits(b, info.Dir)
	b.ReportAllocs()
	b.ResetTimer()
	var nsites, nfiles int
	for i := 0; i < b.N; i++ {
		alloc := &instrument.SiteAlloc{}
		nfiles = 0
		for _, u := range units {
			rw, err := instrument.RewritePackage(u, alloc)
			if err != nil {
				b.Fatal(err)
			}
			nfiles += rw.NumFiles
		}
		nsites = len(alloc.Sites())
	}
	b.ReportMetric(float64(nsites), "sites")
	b.ReportMetric(float64(nfiles), "files")
}
