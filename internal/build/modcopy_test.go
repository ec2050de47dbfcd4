package build

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorder/wafl/instrument/sites"
)

// TestInstrumentModuleCacheDependency: a dependency that --instrument
// names and that lives in the module cache (where the go command refuses
// an overlay) is built from a copy in the work directory; its sites reach
// the site table under their names in the module cache, the binary runs,
// and neither the cache nor the user's go.mod changes.
func TestInstrumentModuleCacheDependency(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	const dep = "golang.org/x/sync v0.24.0"
	tmp := t.TempDir()
	gomod := "module example.com/app\n\ngo 1.26.0\n\nrequire " + dep + "\n"
	writeFile(t, filepath.Join(tmp, "go.mod"), gomod)
	sum, err := os.ReadFile(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(sum), "\n") {
		if strings.HasPrefix(l, dep+" ") || strings.HasPrefix(l, dep+"/go.mod ") {
			lines = append(lines, l)
		}
	}
	writeFile(t, filepath.Join(tmp, "go.sum"), strings.Join(lines, "\n")+"\n")
	writeFile(t, filepath.Join(tmp, "app_test.go"), `package app

import (
	"testing"

	"golang.org/x/sync/errgroup"
)

func TestGroup(t *testing.T) {
	var g errgroup.Group
	for i := 0; i < 4; i++ {
		g.Go(func() error { return nil })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
`)
	dl := exec.Command("go", "mod", "download", "-json", strings.ReplaceAll(dep, " ", "@"))
	dl.Dir = tmp
	out, err := dl.Output()
	if err != nil {
		t.Skipf("cannot download %s (no module proxy?): %v\n%s", dep, err, out)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Skipf("cannot download %s: %v", dep, err)
	}
	cached := filepath.Join(info.Dir, "errgroup", "errgroup.go")
	before, err := os.ReadFile(cached)
	if err != nil {
		t.Fatal(err)
	}

	var log strings.Builder
	res, err := Build(context.Background(), Config{Dir: tmp, Patterns: []string{"."}, Instrument: []string{"golang.org/x/sync/errgroup"}, Log: &log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	if len(res.Packages) != 1 || res.Packages[0].Err != nil {
		t.Fatalf("packages: %+v\nlog:\n%s", res.Packages, log.String())
	}
	p := res.Packages[0]
	tab, err := sites.Load(p.Sites)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range tab.Sites {
		if s.File == cached {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no site in %s; log:\n%s", cached, log.String())
	}
	// The build compiles a copy, under names that say where the file is.
	ov, err := os.ReadFile(filepath.Join(res.WorkDir, "build", "overlay.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o struct{ Replace map[string]string }
	if err := json.Unmarshal(ov, &o); err != nil {
		t.Fatal(err)
	}
	copied := 0
	for k, v := range o.Replace {
		if strings.HasPrefix(k, info.Dir+string(filepath.Separator)) {
			t.Errorf("overlay replaces %s in the module cache", k)
		}
		if filepath.Base(k) == "errgroup.go" {
			copied++
			data, _ := os.ReadFile(v)
			if !strings.HasPrefix(string(data), "//line "+cached+":1\n") {
				t.Errorf("%s (for %s) does not name %s in a //line directive:\n%.200s", v, k, cached, data)
			}
		}
	}
	if copied != 1 {
		t.Errorf("errgroup.go overlaid %d times, want 1: %v", copied, o.Replace)
	}
	if out, err := exec.Command(p.Binary, "-test.count=1").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", p.Binary, err, out)
	}
	if after, _ := os.ReadFile(cached); string(after) != string(before) {
		t.Errorf("%s changed", cached)
	}
	if data, _ := os.ReadFile(filepath.Join(tmp, "go.mod")); string(data) != gomod {
		t.Errorf("user go.mod changed:\n%s", data)
	}
}
