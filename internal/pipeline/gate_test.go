package pipeline

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/plans"
)

func TestChunk(t *testing.T) {
	tests := make([]int, 30)
	for i := range tests {
		tests[i] = i
	}
	for _, c := range []struct {
		g    *gate
		n    int
		want int
	}{
		{nil, 30, 1},
		{&gate{limit: 0}, 30, 1},
		{&gate{limit: 3}, 30, 4},  // limit+1 chunks
		{&gate{limit: 30}, 30, 8}, // at least minChunk tests each
		{&gate{limit: 30}, 3, 1},
		{&gate{limit: 30}, 5, 2},
	} {
		chunks := chunk(tests[:c.n], c.g)
		if len(chunks) != c.want {
			t.Errorf("limit %v, %d tests: %d chunks; want %d", c.g, c.n, len(chunks), c.want)
		}
		if got := slices.Concat(chunks...); !slices.Equal(got, tests[:c.n]) {
			t.Errorf("limit %v, %d tests: chunks %v do not cover the tests in order", c.g, c.n, chunks)
		}
	}
	for n, want := range map[int][]string{1: {"_package"}, 3: {"_package1", "_package2", "_package3"}} {
		for i, w := range want {
			if got := chunkName(i, n); got != w {
				t.Errorf("chunkName(%d, %d) = %q; want %q", i, n, got, w)
			}
		}
	}
}

// spreadPeak runs four jobs through spread with gate g; each job waits
// (up to wait) until all four have started. It returns how many ran at
// once at most.
func spreadPeak(t *testing.T, g *gate, wait time.Duration) int {
	var running, peak atomic.Int32
	var all sync.WaitGroup
	all.Add(4)
	waited := make(chan struct{})
	go func() { all.Wait(); close(waited) }()
	spread(context.Background(), g, 4, func(int) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		all.Done()
		select {
		case <-waited:
		case <-time.After(wait):
		}
		running.Add(-1)
	})
	return int(peak.Load())
}

// TestSpread: with CPUs idle the gate lets a package's jobs run beside
// each other up to its limit; without idle CPUs, or with no room beyond
// the worker, they run one after another.
func TestSpread(t *testing.T) {
	idle := func(n float64) func() float64 { return func() float64 { return n } }
	if got := spreadPeak(t, &gate{limit: 3, idle: idle(2), settle: time.Millisecond}, 10*time.Second); got != 4 {
		t.Errorf("CPUs idle, limit 3 beyond the worker: %d jobs at once; want 4", got)
	}
	if got := spreadPeak(t, &gate{limit: 1, idle: idle(2), settle: time.Millisecond}, time.Second); got != 2 {
		t.Errorf("CPUs idle, limit 1 beyond the worker: %d jobs at once; want 2", got)
	}
	if got := spreadPeak(t, &gate{limit: 3, idle: idle(0.5), settle: time.Millisecond}, 100*time.Millisecond); got != 1 {
		t.Errorf("no CPU idle: %d jobs at once; want 1", got)
	}
	if got := spreadPeak(t, newGate(2, 2), 100*time.Millisecond); got != 1 {
		t.Errorf("--procs = --parallel: %d jobs at once; want 1", got)
	}
}

// TestSpreadKeepsSlot: a slot the gate admitted goes on to the next job
// at once while CPUs stay idle, instead of giving the slot back and
// waiting a settling time for the next admission; with no CPU idle it
// gives the slot back after its job.
func TestSpreadKeepsSlot(t *testing.T) {
	run := func(idleAfter float64) (gap time.Duration, extra int) {
		calls := 0
		var mu sync.Mutex
		idle := func() float64 {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 {
				return 2 // the admission
			}
			return idleAfter
		}
		// Settling for 2 s: the first admission comes after 1 s, a second
		// could not come before 3 s.
		g := &gate{limit: 1, idle: idle, settle: 2 * time.Second}
		var started [4]time.Time
		rest := make(chan struct{})
		var restDone sync.WaitGroup
		restDone.Add(3)
		go func() { restDone.Wait(); close(rest) }()
		spread(context.Background(), g, 4, func(i int) {
			mu.Lock()
			started[i] = time.Now()
			mu.Unlock()
			if i == 0 {
				// The worker's job lasts until the other three are done,
				// or 2.5 s.
				select {
				case <-rest:
				case <-time.After(2500 * time.Millisecond):
				}
				return
			}
			restDone.Done()
		})
		return started[3].Sub(started[1]), calls - 1
	}
	if gap, _ := run(2); gap > time.Second {
		t.Errorf("CPUs idle: the admitted slot's third job started %v after its first; want it at once", gap)
	}
	// Without idle CPUs the slot's job 1 is its only one: jobs 2 and 3
	// wait for the worker, whose job 0 ends at 2.5 s.
	if gap, keeps := run(0.5); gap < time.Second || keeps < 1 {
		t.Errorf("no CPU idle after the admission: jobs 1 and 3 %v apart (want ≥ 1 s), %d keep checks", gap, keeps)
	}
}

// takeSrc is take(t), which creates the file "lock" in the package
// directory and says whether it did (false: it exists).
const takeSrc = `func take(t *testing.T) bool {
	f, err := os.OpenFile("lock", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, os.ErrExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return true
}
`

// lockSrc are eight tests of one package. TestA holds a lock file in the
// package directory until TestB has tried to take it (or 20 seconds
// passed); TestB waits until TestA holds it or is done, then fails when
// it cannot take it. Run one after another, as go test runs them, both
// pass; side by side, TestB fails. A package run cut into two chunks
// puts TestA and TestB in different ones.
const lockSrc = `package lock

import (
	"errors"
	"os"
	"testing"
	"time"
)

` + takeSrc + lockTests

// lockTests are the tests of lockSrc, given take.
const lockTests = `
func TestA(t *testing.T) {
	if !take(t) {
		t.Fatal("lock held")
	}
	defer os.WriteFile("a-done", nil, 0o644)
	defer os.Remove("lock")
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat("b-tried"); err == nil {
			return
		}
	}
}

func TestP1(t *testing.T) {}
func TestP2(t *testing.T) {}
func TestP3(t *testing.T) {}

func TestB(t *testing.T) {
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat("lock"); err == nil {
			break
		}
		if _, err := os.Stat("a-done"); err == nil {
			break
		}
	}
	ok := take(t)
	os.WriteFile("b-tried", nil, 0o644)
	if !ok {
		t.Fatal("lock held")
	}
	os.Remove("lock")
}

func TestQ1(t *testing.T) {}
func TestQ2(t *testing.T) {}
func TestQ3(t *testing.T) {}
`

// portSrc is lockSrc with a fixed TCP port (PORT) for the lock: take
// listens on it and keeps it until the process ends (the file "lock"
// only says that it did).
const portSrc = `package port

import (
	"net"
	"os"
	"testing"
	"time"
)

var held net.Listener

func take(t *testing.T) bool {
	l, err := net.Listen("tcp", "127.0.0.1:PORT")
	if err != nil {
		return false
	}
	held = l
	os.WriteFile("lock", nil, 0o644)
	return true
}
` + lockTests

// prepareSpread prepares module example.com/name, one package of eight
// tests in src, with the package run cut into two chunks that run side
// by side (the gate always finds CPUs idle), and checks that every test
// was prepared without a failure or problem. It returns the summary and
// the package directory.
func prepareSpread(t *testing.T, name, src string) (*Summary, string) {
	t.Helper()
	sum, o := prepareIdle(t, name, src, 2)
	if sum.Prepared != 8 || sum.FailPlain != 0 || len(sum.Problems) != 0 {
		t.Fatalf("%d prepared, %d fail plainly, problems %v; want 8, 0, none", sum.Prepared, sum.FailPlain, sum.Problems)
	}
	return sum, o.Dir
}

// prepareIdle writes src as the test file of module example.com/<name>
// and prepares it with --procs procs while the gate always finds CPUs
// idle. It returns the summary and the options.
func prepareIdle(t *testing.T, name, src string, procs int) (*Summary, PrepareOptions) {
	t.Helper()
	return prepareIdleWith(t, name, src, Tests{Parallel: 1, Procs: procs})
}

// prepareIdleWith is prepareIdle with the tests' options given.
func prepareIdleWith(t *testing.T, name, src string, tests Tests) (*Summary, PrepareOptions) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":          "module example.com/" + name + "\n\ngo 1.22\n",
		name + "_test.go": src,
	})
	defer func(f func() float64, d time.Duration) { gateIdle, gateSettle = f, d }(gateIdle, gateSettle)
	gateIdle, gateSettle = func() float64 { return 2 }, time.Millisecond
	o := PrepareOptions{
		Common:   Common{Dir: dir, WorkDir: filepath.Join(dir, ".wafl")},
		Packages: Packages{Patterns: []string{"./..."}},
		Tests:    tests,
	}
	sum, err := Prepare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return sum, o
}

// TestSpreadNetNS: the chunks of portSrc run side by side, the second in
// a network namespace of its own, so TestB listens on the port TestA's
// process holds and nothing runs again alone; with --host-network TestB fails
// beside TestA and runs again alone.
func TestSpreadNetNS(t *testing.T) {
	if ok, err := testrun.NetNSAvailable(); !ok {
		t.Skipf("no network namespaces here: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	src := strings.ReplaceAll(portSrc, "PORT", port)
	for _, host := range []bool{false, true} {
		sum, _ := prepareIdleWith(t, "port", src, Tests{Parallel: 1, Procs: 2, HostNetwork: host})
		if sum.Prepared != 8 || sum.FailPlain != 0 || len(sum.Problems) != 0 {
			t.Fatalf("host network %v: %d prepared, %d fail plainly, problems %v; want 8, 0, none", host, sum.Prepared, sum.FailPlain, sum.Problems)
		}
		if host && (sum.NetNS != 0 || sum.Alone < 1) || !host && (sum.NetNS < 1 || sum.Alone != 0) {
			t.Errorf("host network %v: %d processes, %d beside another, %d in a namespace of their own, %d again alone", host, sum.Procs, sum.Beside, sum.NetNS, sum.Alone)
		}
	}
}

// TestSpreadRunsAgainAlone: prepare cuts the package run into two
// chunks and, with CPUs idle, runs them side by side; TestB fails there
// for a file TestA holds, runs again alone, passes and is prepared: no
// problem is reported, and the summary counts the rerun.
func TestSpreadRunsAgainAlone(t *testing.T) {
	sum, _ := prepareSpread(t, "lock", lockSrc)
	// Two package runs side by side, then TestB's run of its own, right
	// after its chunk: it may overlap the rest of TestA's chunk, and
	// when it fails there it runs once more, alone.
	if sum.Beside < 2 || sum.Alone < 1 || sum.Procs != 2+sum.Alone {
		t.Errorf("%d test processes, %d beside another, %d tests again alone; want 2 package runs beside each other and one process more per run again", sum.Procs, sum.Beside, sum.Alone)
	}
}

// againSrc are eight tests of one package, cut by a package run of two
// chunks into TestLong, TestR1–R3 and TestB, TestS1–S3. TestB fails the
// first time it runs (in its chunk) and passes the next; TestLong waits
// up to 20 seconds for TestB to have passed and says whether it saw it.
const againSrc = `package again

import (
	"os"
	"testing"
	"time"
)

func TestLong(t *testing.T) {
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat("b-passed"); err == nil {
			os.WriteFile("long-saw-b", nil, 0o644)
			return
		}
	}
}

func TestR1(t *testing.T) {}
func TestR2(t *testing.T) {}
func TestR3(t *testing.T) {}

func TestB(t *testing.T) {
	if _, err := os.Stat("b-failed"); err != nil {
		os.WriteFile("b-failed", nil, 0o644)
		t.Fatal("first run")
	}
	os.WriteFile("b-passed", nil, 0o644)
}

func TestS1(t *testing.T) {}
func TestS2(t *testing.T) {}
func TestS3(t *testing.T) {}
`

// TestSpreadRunsFailedTestAfterItsChunk: a test that failed in its chunk
// runs again as soon as its chunk ended, while the package's other chunk
// still runs (TestLong sees TestB pass), not after every chunk ended; it
// passes there and is prepared, with no problem.
func TestSpreadRunsFailedTestAfterItsChunk(t *testing.T) {
	_, dir := prepareSpread(t, "again", againSrc)
	if _, err := os.Stat(filepath.Join(dir, "long-saw-b")); err != nil {
		t.Errorf("TestLong's chunk ended before TestB ran again (%v); want TestB's run right after its own chunk", err)
	}
}

// TestStartRunsAgainAlone: session.start runs TestA and TestB of lockSrc
// side by side; TestB fails there, runs again alone once TestA is done,
// and the result returned is that of its run alone.
func TestStartRunsAgainAlone(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":       "module example.com/lock\n\ngo 1.22\n",
		"lock_test.go": lockSrc,
	})
	bin := filepath.Join(dir, "lock.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	s := &session{sum: new(Summary)}
	pkg := &pkgBuild{}
	results := make(map[string]testrun.Result)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, test := range []string{"TestA", "TestB"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.start(context.Background(), pkg, testrun.Run{
				Binary: bin, Dir: dir, Test: test, Timeout: time.Minute,
				Output: filepath.Join(dir, test+".log"),
			})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			results[test] = res
			mu.Unlock()
		}()
		if test == "TestA" {
			// TestB starts once TestA holds the lock.
			for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(dir, "lock")); err == nil {
					break
				}
			}
		}
	}
	wg.Wait()
	for test, res := range results {
		if res.ExitCode != 0 {
			out, _ := os.ReadFile(res.Output)
			t.Errorf("%s: exit status %d; want 0 (its run alone)\n%s", test, res.ExitCode, out)
		}
	}
	if s.sum.Procs != 2 || s.sum.Beside != 2 || s.sum.Alone != 1 {
		t.Errorf("%d test processes, %d beside another, %d again alone; want 2, 2, 1", s.sum.Procs, s.sum.Beside, s.sum.Alone)
	}
}

// deferSrc: TestA and TestB each have a candidate pair that delays cannot
// expose (the dispose waits for the goroutine). Once the file "arm"
// exists, TestA holds a lock file until TestB has tried to take it, and
// TestB fails when it could not: side by side, TestB's run fails.
const deferSrc = `package deferred

import (
	"errors"
	"os"
	"testing"
	"time"
)

` + pairSrc + `
func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

` + takeSrc + `
func TestA(t *testing.T) {
	pair()
	if !exists("arm") {
		return
	}
	if !take(t) {
		t.Fatal("lock held")
	}
	defer os.WriteFile("a-done", nil, 0o644)
	defer os.Remove("lock")
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && !exists("b-tried"); time.Sleep(10 * time.Millisecond) {
	}
}

func TestB(t *testing.T) {
	pair()
	if !exists("arm") {
		return
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && !exists("lock") && !exists("a-done"); time.Sleep(10 * time.Millisecond) {
	}
	ok := take(t)
	os.WriteFile("b-tried", nil, 0o644)
	if !ok {
		t.Fatal("lock held")
	}
	os.Remove("lock")
}
`

// TestDetectDefersRunsThatFailBeside: TestB's detection run fails beside
// TestA's; it does not count, and TestB's runs go on after TestA's, with
// nothing beside, where it passes: no problem, one run in TestB's plan.
func TestDetectDefersRunsThatFailBeside(t *testing.T) {
	o, _ := preparedModule(t, "deferred", deferSrc, 2)
	if err := os.WriteFile(filepath.Join(o.Dir, "arm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(f func() float64, d time.Duration) { gateIdle, gateSettle = f, d }(gateIdle, gateSettle)
	gateIdle, gateSettle = func() float64 { return 2 }, time.Millisecond
	o.Procs = 2
	sum, err := Detect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Bugs) != 0 || len(sum.Problems) != 0 {
		t.Fatalf("detect: bugs %v, problems %v; want none", sum.Bugs, sum.Problems)
	}
	if sum.Alone != 1 || sum.Runs != 2 {
		t.Errorf("detect: %d runs again alone, %d runs counted; want 1, 2", sum.Alone, sum.Runs)
	}
	p, err := plans.Load(filepath.Join(o.WorkDir, "plans", "example.com", "deferred", "TestB.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 1 {
		t.Errorf("TestB's plan has %d runs; want 1 (the run beside TestA's does not count)", len(p.Runs))
	}
}
