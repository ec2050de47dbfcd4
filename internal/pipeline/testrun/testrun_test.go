package testrun

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// helperBinary builds a small test binary with a passing, a failing and a
// hanging test.
func helperBinary(t *testing.T) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/h\n\ngo 1.22\n",
		"h_test.go": `package h

import (
	"crypto/sha256"
	"net"
	"os"
	"os/exec"
	"testing"
)

func TestPass(t *testing.T) {}
func TestFail(t *testing.T) { t.Fatal("boom") }
func TestSkipMe(t *testing.T) {}
func TestHang(t *testing.T) {
	if os.Getenv("H_CHILD") == "" {
		// A grandchild that would outlive a plain kill of the test process.
		cmd := exec.Command(os.Args[0], "-test.run", "^TestHang$")
		cmd.Env = append(os.Environ(), "H_CHILD=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(os.Getenv("H_PIDFILE"), []byte{}, 0o644)
	}
	select {}
}
func TestListen(t *testing.T) {
	// A fixed port, as many tests have: taken by whoever listens first.
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("H_PORT"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
func TestBusy(t *testing.T) {
	// A fixed amount of work, tens of milliseconds of CPU however busy
	// the machine: the run's CPU time.
	sum := sha256.Sum256(nil)
	for range 1 << 20 {
		sum = sha256.Sum256(sum[:])
	}
	_ = sum
}
func BenchmarkX(b *testing.B) {}
`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(dir, "h.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	return bin, dir
}

func TestListAndRun(t *testing.T) {
	if testing.Short() && runtime.GOOS != "linux" {
		t.Skip("builds a helper binary")
	}
	bin, dir := helperBinary(t)
	ctx := context.Background()

	// Without a hash, then with one (listed and cached), then from the
	// cache: the same tests each time.
	for _, hash := range []string{"", "sha256:1", "sha256:1"} {
		tests, _, err := List(ctx, bin, hash, dir, "", "SkipMe")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(tests, ","), "TestPass,TestFail,TestHang,TestListen,TestBusy"; got != want {
			t.Errorf("List(hash %q) = %s, want %s", hash, got, want)
		}
		if tests, _, _ = List(ctx, bin, hash, dir, "Pass|Fail", ""); strings.Join(tests, ",") != "TestPass,TestFail" {
			t.Errorf("List(hash %q) with run = %v", hash, tests)
		}
		if _, _, err := List(ctx, bin, hash, dir, "", "("); err == nil {
			t.Error("bad --skip regexp accepted")
		}
	}
	// A cached list is used only for the binary hash it was made with.
	if err := os.WriteFile(bin+".list", []byte("sha256:2 .\nTestStale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if tests, _, _ := List(ctx, bin, "sha256:2", dir, "", ""); strings.Join(tests, ",") != "TestStale" {
		t.Errorf("listTests from the cache = %v, want TestStale", tests)
	}
	if tests, _, _ := List(ctx, bin, "sha256:3", dir, "", "SkipMe"); strings.Join(tests, ",") != "TestPass,TestFail,TestHang,TestListen,TestBusy" {
		t.Errorf("listTests of another binary hash = %v", tests)
	}

	out := filepath.Join(t.TempDir(), "out.log")
	res, err := Run{Binary: bin, Dir: dir, Test: "TestPass", Timeout: time.Minute, Output: out}.Start(ctx)
	if err != nil || res.ExitCode != 0 || res.TimedOut {
		t.Errorf("TestPass: %+v, %v", res, err)
	}
	res, err = Run{Binary: bin, Dir: dir, Test: "TestFail", Timeout: time.Minute, Output: out}.Start(ctx)
	if err != nil || res.ExitCode != 1 || res.TimedOut {
		t.Errorf("TestFail: %+v, %v", res, err)
	}
	if data, _ := os.ReadFile(out); !bytes.Contains(data, []byte("boom")) {
		t.Errorf("output lacks the failure:\n%s", data)
	}
	// A test that hashes for tens of milliseconds of CPU.
	res, err = Run{Binary: bin, Dir: dir, Test: "TestBusy", Timeout: time.Minute, Output: out}.Start(ctx)
	if err != nil || res.ExitCode != 0 || res.CPU < 10*time.Millisecond || res.CPU > res.Duration*4 {
		t.Errorf("TestBusy: %+v, %v; want exit 0 and a CPU time of its spin", res, err)
	}
}

func TestHungRunIsKilledWithItsChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a timeout")
	}
	bin, dir := helperBinary(t)
	out := filepath.Join(t.TempDir(), "out.log")
	pidfile := filepath.Join(t.TempDir(), "started")
	start := time.Now()
	res, err := Run{Binary: bin, Dir: dir, Test: "TestHang", Timeout: 3 * time.Second, Output: out,
		Env: []string{"H_PIDFILE=" + pidfile}}.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Errorf("hung run not reported as timed out: %+v", res)
	}
	// Generous bound: the run must end, not wait for the grandchild forever.
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("hung run took %v", d)
	}
}

func TestSplitPattern(t *testing.T) {
	for _, c := range []struct{ in, first, rest string }{
		{"", "", ""},
		{"TestA", "TestA", ""},
		{"TestA/b", "TestA", "b"},
		{"TestA/b/c", "TestA", "b/c"},
		{"Test[/]x/y", "Test[/]x", "y"},
		{`Test\/x/y`, `Test\/x`, "y"},
	} {
		f, r := SplitPattern(c.in)
		if f != c.first || r != c.rest {
			t.Errorf("SplitPattern(%q) = %q, %q; want %q, %q", c.in, f, r, c.first, c.rest)
		}
	}
}
