package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/internal/split"
)

// One process per package: prepare runs the selected tests
// of a package's binary in one recording process, as go test does, and
// splits the spill file per test by the tests' boundary marks and fork
// ancestry (record/split). A test is kept from the package run when its
// end mark is in the spill file, it did not fail and the run's crash, if
// any, was not on one of its goroutines; every other test (it crashed,
// hung, failed, exited, or never ran) runs again in a process of its
// own, the way --per-test runs every test, and alone when that run fails
// beside another (runChunks), so that its failure and crash report are
// exactly those of a run of its own.

// pkgRunName names the package run's spill file and log; no test is
// called so.
const pkgRunName = "_package"

// pkgRun is the outcome of one package run.
type pkgRun struct {
	kept  map[string]bool // tests whose split trace is used
	tests map[string]*split.TestStats
	load  float64 // loadFactor before the run
	// output is the run's output: go test -v lines name its subtests.
	output string
	// analyzed are the kept tests' accounts, analyzed right after their
	// chunk while the other chunks still run (preparedInPackage).
	analyzed map[string]analyzed
	// again are the accounts of the tests not kept, each prepared in a
	// run of its own (prepareTest) right after its chunk ended, while the
	// package's other chunks still ran (runChunks).
	again map[string]analyzed
}

// analyzed is what preparedInPackage returned for a test.
type analyzed struct {
	note string
	err  error
}

// againOf returns the account of test, prepared in a run of its own
// after its chunk; ok is false when it was not (pr may be nil).
func (pr *pkgRun) againOf(test string) (a analyzed, ok bool) {
	if pr == nil {
		return analyzed{}, false
	}
	a, ok = pr.again[test]
	return a, ok
}

// runPackages runs the package run of every package with more than one
// of jobs' tests, o.Parallel packages at a time.
func runPackages(ctx context.Context, s *session, o *PrepareOptions, jobs []job) map[string]*pkgRun {
	type pkgJobs struct {
		pkg   *pkgBuild
		tests []string
	}
	var order []*pkgJobs
	by := map[string]*pkgJobs{}
	for _, j := range jobs {
		pj := by[j.pkg.ImportPath]
		if pj == nil {
			pj = &pkgJobs{pkg: j.pkg}
			by[j.pkg.ImportPath] = pj
			order = append(order, pj)
		}
		// A remembered failure is reported by prepareTest as before.
		if rememberedFailure(s.ws, j, o.RetryFailing) == nil {
			pj.tests = append(pj.tests, j.test)
		}
	}
	var mu sync.Mutex
	runs := map[string]*pkgRun{}
	forEach(ctx, o.Parallel, order, func(pj *pkgJobs) {
		if len(pj.tests) < 2 {
			return // one test: its run alone is the package run
		}
		pr := runChunks(ctx, s, o, pj.pkg, pj.tests)
		if ctx.Err() != nil {
			// Interrupted: the tests that finished before it keep their
			// plans, analyzed now (the workflow starts no more tests).
			keepFinished(context.WithoutCancel(ctx), s, o, pj.pkg, pj.tests, pr)
			return
		}
		// Every kept test was analyzed right after its chunk (runChunks).
		mu.Lock()
		runs[pj.pkg.ImportPath] = pr
		mu.Unlock()
	})
	return runs
}

// runChunks runs the package run of pkg's tests: one process, or, when
// the gate may admit processes beside the workers', the tests cut into
// chunks in their order, one chunk after another and more at once while
// CPUs are idle (gate.go). A test that failed, hung or crashed in its
// chunk, or never ran there, is prepared in a run of its own
// (prepareTest) as soon as its chunk ended, while the other chunks go
// on: as every run, it runs again alone when it fails beside another
// (session.start), so that its failure is that of a run of its own, as
// in a package run of one process. Its account is in the run's again.
func runChunks(ctx context.Context, s *session, o *PrepareOptions, pkg *pkgBuild, tests []string) *pkgRun {
	chunks := chunk(tests, s.gate)
	pr := &pkgRun{kept: map[string]bool{}, tests: map[string]*split.TestStats{}, load: loadFactor(),
		analyzed: map[string]analyzed{}, again: map[string]analyzed{}}
	var mu sync.Mutex
	p := &pkg.procs
	var thieves atomic.Int64
	// runChunk runs one chunk and what comes of it; a chunk may give the
	// tests it has not begun to a chunk of their own (stealer).
	var runChunk func(tests []string, name string)
	runChunk = func(tests []string, name string) {
		var (
			c   *pkgRun
			err error
		)
		st := &stealer{tests: tests, log: s.ws.LogPath(pkg.ImportPath, name, "prepare.log")}
		cctx, cancel := context.WithCancel(ctx)
		var tw sync.WaitGroup
		defer tw.Wait() // the chunk that took tests from this one
		p.alone.RLock() // a run that must be alone waits for the chunk
		beside := s.track(pkg, func(netns bool) {
			stop := st.watch(s.gate, cancel, func(rest []string) {
				tw.Go(func() {
					defer s.gate.release()
					runChunk(rest, name+"."+strconv.FormatInt(thieves.Add(1), 10))
				})
			})
			c, err = runPackage(cctx, s, o, pkg, tests, name, netns)
			stop()
		})
		p.alone.RUnlock()
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.prog.Printf("wafl: %s: the tests' shared preparation run failed, each runs alone: %v\n", pkg.ImportPath, err)
			}
			return
		}
		var kept, redo []string
		mu.Lock()
		for t, ts := range c.tests {
			if !st.gave(t) {
				pr.tests[t] = ts
			}
		}
		alone := 0
		for _, t := range tests {
			if st.gave(t) {
				continue // the chunk that took it prepares it
			}
			if c.kept[t] {
				pr.kept[t] = true
				kept = append(kept, t)
				continue
			}
			if beside {
				alone++ // runs again on its own, as every test not kept
			}
			redo = append(redo, t)
		}
		mu.Unlock()
		s.sum.add(func(s *Summary) { s.Alone += alone })
		// The chunk's kept tests are analyzed now, while the other
		// chunks run, with the load measured before the package run.
		view := &pkgRun{tests: c.tests, load: pr.load, output: c.output}
		for _, t := range kept {
			if ctx.Err() != nil {
				return // runPackages keeps what finished
			}
			note, err := preparedInPackage(context.WithoutCancel(ctx), s, o, job{pkg: pkg, test: t}, view)
			mu.Lock()
			pr.analyzed[t] = analyzed{note, err}
			mu.Unlock()
		}
		for _, t := range redo {
			if ctx.Err() != nil {
				return // the workflow reports the interrupt
			}
			note, err := prepareTest(ctx, s, o, job{pkg: pkg, test: t})
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			pr.again[t] = analyzed{note, err}
			mu.Unlock()
		}
	}
	spread(ctx, s.gate, len(chunks), func(i int) { runChunk(chunks[i], chunkName(i, len(chunks))) })
	return pr
}

// runPackage runs tests of pkg in one recording process named name and
// splits its spill file into the tests' raw traces; netns runs it in a
// network namespace of its own (testrun.Run.NetNS).
func runPackage(ctx context.Context, s *session, o *PrepareOptions, pkg *pkgBuild, tests []string, name string, netns bool) (*pkgRun, error) {
	ip := pkg.ImportPath
	raw := s.ws.RawTracePath(ip, name)
	if err := os.MkdirAll(filepath.Dir(raw), 0o755); err != nil {
		return nil, err
	}
	os.Remove(raw)
	defer os.Remove(raw)
	sub, skip := o.subtestArgs()
	pr := &pkgRun{kept: map[string]bool{}, load: loadFactor()}
	res, err := testrun.Run{
		Sub:     sub,
		Skip:    skip,
		Binary:  pkg.Binary,
		Dir:     pkg.Dir,
		Tests:   tests,
		Env:     []string{abi.Env(abi.EnvMode, abi.ModeRecord), abi.Env(abi.EnvTrace, raw)},
		Timeout: o.Timeout,
		Output:  s.ws.LogPath(ip, name, "prepare.log"),
		Extra:   o.binaryArgs(),
		NetNS:   netns,
		// An instrumented binary brings its namespace's loopback up.
		Instrumented: true,
	}.Start(ctx)
	if err != nil && !(ctx.Err() != nil && res.Output != "") {
		return nil, err
	}
	if ctx.Err() != nil {
		// Interrupted: what the spill file holds of the tests that ended
		// before the kill is still theirs. The run's crash and exit
		// status mean nothing; a test is kept when its end mark is in.
		res.ExitCode = 0
	}
	if _, err := os.Stat(raw); err != nil {
		return nil, fmt.Errorf("the test binary wrote no trace (exit status %d); output in %s", res.ExitCode, res.Output)
	}
	st, err := split.Split(raw, tests, func(t string) string { return s.ws.RawTracePath(ip, t) })
	if err != nil {
		return nil, err
	}
	pr.tests, pr.output = st.Tests, res.Output
	// The goroutine a crash happened on, when the run crashed: its test
	// runs again alone, and so does every test when no test owns it.
	crashed, all := "", false
	if res.ExitCode != 0 && !res.TimedOut {
		if g, creator, ok := crashGoroutine(res.Output); ok {
			// The crashing goroutine's fork row may not have reached the
			// file; the traceback names the goroutine that created it.
			if crashed = st.Owner(g); crashed == "" && creator != 0 {
				crashed = st.Owner(creator)
			}
			all = crashed == ""
		}
	}
	for _, t := range tests {
		ts := st.Tests[t]
		if ts.Ended && !ts.Failed && t != crashed && !all {
			pr.kept[t] = true
		}
	}
	rest := "the others run alone"
	if ctx.Err() != nil {
		rest = "stopped before its end: the others run in the chunk they were given to (stealer), or alone"
	}
	logSplit(res.Output, res, st, len(pr.kept), len(tests), rest)
	return pr, nil
}

// keepFinished analyzes, after an interrupt, the traces of the tests the
// package run finished, so that their plans survive it.
func keepFinished(ctx context.Context, s *session, o *PrepareOptions, pkg *pkgBuild, tests []string, pr *pkgRun) {
	n := 0
	for _, t := range tests {
		if a, done := pr.analyzed[t]; done {
			if a.err == nil {
				n++
			}
			continue
		}
		if !pr.kept[t] {
			continue
		}
		if _, err := preparedInPackage(ctx, s, o, job{pkg: pkg, test: t}, pr); err == nil {
			n++
		}
	}
	s.prog.Printf("wafl: interrupted: %s: kept the plans of %d of %d tests that finished in the package run\n", pkg.ImportPath, n, len(tests))
}

// preparedInPackage analyzes the trace split out of the package run for
// test j, which passed there.
func preparedInPackage(ctx context.Context, s *session, o *PrepareOptions, j job, pr *pkgRun) (string, error) {
	s.sum.add(func(s *Summary) { s.Tests++ })
	ts := pr.tests[j.test]
	more := ", package run"
	if ts.Late > 0 {
		more += fmt.Sprintf("; %s of goroutines that outlived the test dropped", plural(int(ts.Late), "event", "events"))
	}
	return analyzePrepared(ctx, s, o, j, s.ws.RawTracePath(j.pkg.ImportPath, j.test), pr.output, pr.load,
		time.Duration(ts.End-ts.Begin), ts.Late, more)
}

// crashRE finds the goroutine a Go crash (an unrecovered panic, a fatal
// error) happened on: the first goroutine header after "panic:" or
// "fatal error:", and its stack up to the next blank line.
var crashRE = regexp.MustCompile(`(?m)^(?:panic|fatal error): [\s\S]*?^goroutine (\d+) \[[^\n]*\n((?:.+\n)*)`)

// createdRE finds the goroutine that created the one whose stack it reads.
var createdRE = regexp.MustCompile(`(?m)^created by .* in goroutine (\d+)$`)

// crashGoroutine returns the goroutine of the crash in the run's output
// and the goroutine that created it (0: not said).
func crashGoroutine(output string) (g, creator uint64, ok bool) {
	data, err := os.ReadFile(output)
	if err != nil {
		return 0, 0, false
	}
	m := crashRE.FindSubmatch(data)
	if m == nil {
		return 0, 0, false
	}
	g, err = strconv.ParseUint(string(m[1]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if c := createdRE.FindSubmatch(m[2]); c != nil {
		creator, _ = strconv.ParseUint(string(c[1]), 10, 64)
	}
	return g, creator, true
}

// logSplit appends what the split did to the package run's log.
// rest says what happens to the tests not kept.
func logSplit(path string, res testrun.Result, st *split.Stats, kept, n int, rest string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "\nwafl: package run: exit status %d, timed out %v, %s; %d of %d tests kept, %s\n",
		res.ExitCode, res.TimedOut, res.Duration.Round(time.Millisecond), kept, n, rest)
	fmt.Fprintf(&b, "wafl: split: %d events, %d marks, prologue %d, epilogue %d, shared %d, unattributed %d, truncated %v\n",
		st.Events, st.Marks, st.Prologue, st.Epilogue, st.Shared, st.Unattributed, st.Truncated)
	for _, ts := range st.Tests {
		if ts.Late > 0 || !ts.Ended || ts.Failed {
			fmt.Fprintf(&b, "wafl: split: %s: runs %d, ended %v, failed %v, events %d, late (dropped) %d\n",
				ts.Name, ts.Runs, ts.Ended, ts.Failed, ts.Events, ts.Late)
		}
	}
	f.WriteString(b.String())
}

// A chunk's tests run one after another in its process. When the test it
// runs has taken stealAfter, at least stealLeft tests are still to begin
// and a CPU is idle (the gate admits a process), the chunk gives the
// latter half of the tests it has not begun (its last one, when one is
// left: a long test followed by another long one) to a chunk of their own, which
// runs beside it, and its process is stopped when it begins one of them:
// its tests that ended are kept as in any interrupted package run
// (runPackage). Tests that sleep or wait for timers then do not wait for
// one another because they were neighbours in a chunk (docs/algorithm.md,
// "One process per package"). Every process given costs some 10–20 ms of
// CPU to start, record and split: a package of short tests gives none.
const (
	stealAfter = 2 * time.Second
	stealLeft  = 1
	stealPoll  = 250 * time.Millisecond
)

// stealer watches a chunk's package run through its output, where go
// test -v writes "=== RUN   TestX" as each top-level test begins.
type stealer struct {
	tests []string // the chunk's tests, in the order they run
	log   string   // the package run's output

	mu    sync.Mutex
	given map[string]bool // tests given to another chunk

	off   int64  // of log, read up to here
	part  []byte // an unfinished last line
	buf   []byte
	begun []string
}

// gave says whether the chunk gave test t to another chunk.
func (st *stealer) gave(t string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.given[t]
}

// watch starts watching until the returned stop is called. give starts
// the chunk of the tests given (the gate admitted a process for it: give
// releases it); kill stops the package run.
func (st *stealer) watch(g *gate, kill func(), give func(rest []string)) (stop func()) {
	if !g.admits() || len(st.tests) < 1+stealLeft {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(stealPoll)
		defer tick.Stop()
		cur, since := "", time.Time{}
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			st.read()
			if len(st.begun) == 0 {
				continue
			}
			for _, b := range st.begun {
				if st.gave(b) {
					kill() // it began a test another chunk runs
					return
				}
			}
			if last := st.begun[len(st.begun)-1]; last != cur {
				cur, since = last, time.Now()
				continue
			}
			if time.Since(since) < stealAfter {
				continue
			}
			rest := st.rest()
			if len(rest) < stealLeft || g.tryAcquireN(1) == 0 {
				continue
			}
			rest = rest[len(rest)/2:]
			st.mu.Lock()
			if st.given == nil {
				st.given = map[string]bool{}
			}
			for _, t := range rest {
				st.given[t] = true
			}
			st.mu.Unlock()
			give(rest)
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// rest returns the chunk's tests not begun and not given, in order.
func (st *stealer) rest() []string {
	seen := make(map[string]bool, len(st.begun))
	for _, b := range st.begun {
		seen[b] = true
	}
	var rest []string
	for _, t := range st.tests {
		if !seen[t] && !st.gave(t) {
			rest = append(rest, t)
		}
	}
	return rest
}

// read reads the output the run wrote since the last read and appends the
// top-level tests it began to st.begun.
func (st *stealer) read() {
	f, err := os.Open(st.log)
	if err != nil {
		return
	}
	defer f.Close()
	if st.buf == nil {
		st.buf = make([]byte, 64<<10)
	}
	for {
		n, err := f.ReadAt(st.buf, st.off)
		st.off += int64(n)
		data := append(st.part, st.buf[:n]...)
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			if name, ok := strings.CutPrefix(string(data[:i]), "=== RUN   "); ok && !strings.Contains(name, "/") {
				st.begun = append(st.begun, name)
			}
			data = data[i+1:]
		}
		st.part = append(st.part[:0], data...)
		if err != nil || n == 0 {
			return
		}
	}
}
