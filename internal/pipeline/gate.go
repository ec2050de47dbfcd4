package pipeline

import (
	"cmp"
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/plans"
)

// A package's tests run one after another, as go test runs them, on
// --parallel workers. Tests that mostly wait (sleep, poll, wait for a
// timer or a peer over loopback) leave the CPUs idle while they do; the
// gate lets more test processes start beside them, one at a time, while
// at least one CPU stayed idle, up to --procs processes in all. A test
// run that fails or hangs while another test of its package ran beside
// it runs again alone (session.start), so every outcome wafl reports,
// every plan it keeps and every failure it remembers is that of a run
// with no other test of its package running, as under go test.

// gate admits test processes beyond the workers' own.
type gate struct {
	limit int // most test processes at once, the workers' included
	idle  func() float64
	// settle is how long an admission waits after the last one, so that
	// the new process's CPU shows in the idle measure.
	settle time.Duration

	mu      sync.Mutex
	running int // processes admitted through the gate, running now
	last    time.Time
	// procs are the test processes running now (count), peak the most
	// that ran at once.
	procs, peak int
}

// newGate returns the gate of a workflow whose workers run workers test
// processes at once; limit ≤ workers admits none beyond them.
func newGate(workers, limit int) *gate {
	return &gate{limit: limit - workers, idle: gateIdle, settle: gateSettle}
}

// gateIdle and gateSettle are a new gate's measure of idle CPUs and its
// settling time (tests replace them).
var (
	gateIdle   = idleCPUs
	gateSettle = 400 * time.Millisecond
)

// tryAcquireN admits up to n more processes at once, within the limit
// and a settling time after the last admission: one for each CPU that
// stayed idle over the last measure. It returns how many it admitted;
// release gives back each.
func (g *gate) tryAcquireN(n int) int {
	if g == nil || g.limit <= 0 || n <= 0 {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running >= g.limit || time.Since(g.last) < g.settle {
		return 0
	}
	k := min(n, g.limit-g.running, int(g.idle()))
	if k <= 0 {
		return 0
	}
	g.running += k
	g.last = time.Now()
	return k
}

// admits says whether the gate can ever admit a process.
func (g *gate) admits() bool { return g != nil && g.limit > 0 }

// poll is how often a caller waiting for an admission asks again: half
// the settling time.
func (g *gate) poll() time.Duration {
	if g == nil || g.settle <= 0 {
		return time.Second
	}
	return g.settle / 2
}

// keep says whether a slot the gate admitted may take another job: at
// least one CPU stayed idle over the last measure, which counts the slot's
// own process. No settling wait: the slot adds no process.
func (g *gate) keep() bool { return g.idle() >= 1 }

func (g *gate) release() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
}

// spread runs fn(0) … fn(n-1), a package's jobs (tests, or chunks of its
// tests), in that order: one after another on the calling worker, and,
// while the gate g admits them, more at once beside it: one more for each
// CPU that stayed idle, each settling time. A slot the gate
// admitted takes the next job as soon as its own ends while a CPU stays
// idle (gate.keep), so that a package of short tests that mostly wait
// keeps as many processes going as the CPUs allow, not one more per
// settling time. It returns when every started job has returned.
func spread(ctx context.Context, g *gate, n int, fn func(int)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	var next atomic.Int64
	take := func() (int, bool) {
		if ctx.Err() != nil {
			return 0, false
		}
		i := int(next.Add(1) - 1)
		return i, i < n
	}
	own := make(chan struct{}) // the worker's own run of jobs ended
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(own)
		for i, ok := take(); ok; i, ok = take() {
			fn(i)
		}
	}()
	tick := time.NewTicker(g.poll())
	defer tick.Stop()
	for {
		select {
		case <-own:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		left := n - int(next.Load())
		if left <= 0 {
			continue
		}
		for range g.tryAcquireN(left) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer g.release()
				for i, ok := take(); ok; i, ok = take() {
					fn(i)
					if !g.keep() {
						return
					}
				}
			}()
		}
	}
}

// pkgProcs tracks the test processes of one package for session.start.
type pkgProcs struct {
	alone            sync.RWMutex // held for reading by every run, for writing by a run that must be alone
	mu               sync.Mutex
	running, started int
}

// begin counts a run in; overlapped says whether another was running.
func (p *pkgProcs) begin() (seq int, overlapped bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	overlapped = p.running > 0
	p.running++
	p.started++
	return p.started, overlapped
}

// end counts a run out; it overlapped another when one was running at
// its start or started after it.
func (p *pkgProcs) end(seq int, overlapped bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	return overlapped || p.started != seq
}

// start runs tr for a test of pkg. When the run failed, crashed or hung
// while another test of the package ran beside it (a fixed port, a file
// in the package directory, a CPU they shared), it runs again with none
// beside it, after removing files (what the run writes and wafl reads
// back), and that run's result is the one returned.
func (s *session) start(ctx context.Context, pkg *pkgBuild, tr testrun.Run, files ...string) (testrun.Result, error) {
	res, again, err := s.startOnce(ctx, pkg, tr)
	if !again {
		return res, err
	}
	p := &pkg.procs
	p.alone.Lock()
	defer p.alone.Unlock()
	for _, f := range files {
		os.Remove(f)
	}
	return tr.Start(ctx)
}

// startOnce runs tr for a test of pkg; again says that it failed, crashed
// or hung while another test of the package ran beside it, so that its
// result does not count: it must run again alone.
func (s *session) startOnce(ctx context.Context, pkg *pkgBuild, tr testrun.Run) (res testrun.Result, again bool, err error) {
	p := &pkg.procs
	p.alone.RLock()
	beside := s.track(pkg, func(netns bool) {
		tr.NetNS, tr.Instrumented = netns, true
		res, err = tr.Start(ctx)
	})
	p.alone.RUnlock()
	again = beside && err == nil && ctx.Err() == nil && (res.ExitCode != 0 || res.TimedOut)
	if again {
		s.sum.add(func(s *Summary) { s.Alone++ })
	}
	return res, again, err
}

// track runs fn, which runs one test process of pkg, and counts the
// process in the summary; beside says whether another of the package's
// test processes ran while it did. fn's netns says that the process is to
// start in a network namespace of its own (testrun.Run.NetNS): another
// process of the package runs at its start, and the session isolates
// them (the first of a package's processes running at once keeps the
// host's network, for a test that needs a service there).
func (s *session) track(pkg *pkgBuild, fn func(netns bool)) (beside bool) {
	p := &pkg.procs
	seq, beside := p.begin()
	done := s.gate.count()
	netns := beside && s.netns
	fn(netns)
	peak := done()
	beside = p.end(seq, beside)
	s.sum.add(func(s *Summary) {
		s.Procs++
		s.Peak = max(s.Peak, peak)
		if beside {
			s.Beside++
		}
		if netns {
			s.NetNS++
		}
	})
	return beside
}

// errBeside stops a test's detection runs when one failed beside
// another test of its package: the runner runs the rest of them, that
// run first, after the package's other tests, with none beside
// (resumeAlone).
var errBeside = errors.New("a run failed beside another test of its package")

// resume is where a test's detection runs stopped by errBeside go on.
type resume struct {
	k        int      // runs of this detect call done
	failures []string // their failures under delays
	known    []*report.Bug
	learned  string
}

// deferRuns remembers where test j's runs stopped.
func (s *session) deferRuns(j job, r resume) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resumes == nil {
		s.resumes = map[job]resume{}
	}
	s.resumes[j] = r
}

// resumeAt returns where test j's runs go on; ok is false when they
// start from the beginning.
func (s *session) resumeAt(j job) (r resume, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok = s.resumes[j]
	return r, ok
}

// count counts a test process in; the function it returns counts it out
// and says how many ran at most at once while it ran.
func (g *gate) count() func() int {
	if g == nil {
		return func() int { return 1 }
	}
	g.mu.Lock()
	g.procs++
	g.peak = max(g.peak, g.procs)
	g.mu.Unlock()
	return func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.procs--
		return g.peak
	}
}

// DefaultProcs is --procs' default: four test processes per CPU.
func DefaultProcs() int { return 4 * runtime.GOMAXPROCS(0) }

// minChunk is the fewest tests a chunk of a package run has.
const minChunk = 4

// chunk cuts the tests of a package run into chunks in their order, for
// spread: as many as the gate could run at once beside a worker, but no
// more than leave minChunk tests to each on average; one when the gate
// admits no process beyond the workers'. Consecutive tests stay together:
// neighbouring tests are often alike and share a fixed port or socket
// path, and would fail beside each other and run again alone.
func chunk[T any](tests []T, g *gate) [][]T {
	n := 1
	if g != nil && g.limit > 0 {
		n = min((len(tests)+minChunk-1)/minChunk, g.limit+1)
	}
	if n <= 1 {
		return [][]T{tests}
	}
	chunks := make([][]T, n)
	for i := range n {
		chunks[i] = tests[i*len(tests)/n : (i+1)*len(tests)/n]
	}
	return chunks
}

// chunkName names the package run of chunk i of n: pkgRunName for one,
// pkgRunName1 … pkgRunNameN for more.
func chunkName(i, n int) string {
	if n == 1 {
		return pkgRunName
	}
	return pkgRunName + strconv.Itoa(i+1)
}

// longestFirst orders a package's tests for spread by how long their
// preparation run took (the plan's provenance), longest first, so that
// the long ones do not start last; tests without a plan keep their place
// after them.
func longestFirst(s *session, js []job) []job {
	dur := make(map[job]int64, len(js))
	for _, j := range js {
		if p, err := plans.Load(s.ws.PlanPath(j.pkg.ImportPath, j.test)); err == nil {
			dur[j] = p.Provenance.DurationNs
		}
	}
	out := slices.Clone(js)
	slices.SortStableFunc(out, func(a, b job) int { return cmp.Compare(dur[b], dur[a]) })
	return out
}
