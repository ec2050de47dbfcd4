// Package hunt runs wafl on many widely used modules and puts its cost next
// to the module's own tests (the hunt table, docs/hunt.md): per module, timed
// side by side, plain `go test -count=1`, `go test -race -count=1`, `wafl
// prepare` and `wafl detect --runs 3`, with the packages and skipped tests of
// the pinned list (bench/scripts/hunt/modules.tsv). What wafl found — bug
// reports, tests that failed only under delays, tests that failed under
// instrumentation without delays, packages that did not build instrumented —
// is listed per module for triage, with the report and log files copied
// beside the results.
//
// Fetching, running and reading wafl's files are package fieldruns': a module
// version comes through the Go module proxy and is copied out of the module
// cache; wafl's work directory is outside the copy; numbers come from the
// site tables, plans and reports, and the summary wafl prints only for what no
// file holds.
//
// Results are stored per module (results/<name>.json), so an interrupted hunt
// resumes where it stopped; each step is bounded and a step that ran out of
// time is recorded as such. The command is bench/hunt/cmd/hunt (`make hunt`).
package hunt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memorder/wafl/bench/fieldbench"
	"github.com/memorder/wafl/bench/fieldruns"
)

// Step is one timed command of a module's run.
type Step struct {
	fieldruns.Timing
	// Ran is false for a step not run (an earlier one failed).
	Ran bool `json:"ran"`
	// Failed are the tests that failed ("pkg.Test"), and packages that
	// failed without a failing test (a build failure, a panic outside a
	// test, a timeout) as "pkg".
	Failed []string `json:"failed,omitempty"`
	// Races counts "WARNING: DATA RACE" in the output (-race only).
	Races int `json:"races,omitempty"`
	// Hung says that a test ran until go test's own timeout ("panic:
	// test timed out after"): the step's time is the timeout's.
	Hung bool `json:"hung,omitempty"`
	// Output is where the command's output was kept (the work directory).
	Output string `json:"output,omitempty"`
}

// Cell is the step's time for the table: "wall / CPU" in seconds.
func (s Step) Cell() string {
	switch {
	case !s.Ran:
		return "—"
	case s.TimedOut:
		return fmt.Sprintf("timeout (%.0fs)", s.Wall)
	}
	return fmt.Sprintf("%s / %s", secs(s.Wall), secs(s.CPU))
}

func secs(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + "s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + "s"
}

// Broken is a test that failed only under delays: it passed wafl's
// preparation run (no delays) and failed or hung in a detection run without
// a MEMORDER panic wafl could attribute.
type Broken struct {
	Package string `json:"package"`
	Test    string `json:"test"`
	// Kind is "fail" or "timeout" under delays; "no-delay hang" or
	// "no-delay fail" for a test that hung or crashed in a recording run
	// of detect (no delays) after passing in prepare.
	Kind string `json:"kind"`
	// Runs are wafl's lines for the failed runs: the reason, the last
	// delay before it, the output file.
	Runs []string `json:"runs"`
	// Logs are the run outputs copied beside the results (their tails),
	// relative to the results directory.
	Logs []string `json:"logs,omitempty"`
	// FailsPlain: the test failed in plain go test too (flaky, or not
	// caused by delays).
	FailsPlain bool `json:"fails_plain,omitempty"`
}

// WaflError is something that went wrong in wafl rather than in the tests:
// a package that builds plainly but not instrumented, a test that passes in
// plain go test but fails under instrumentation without delays, an analysis
// error, a wafl command that crashed, exited 2 or ran out of time.
type WaflError struct {
	Kind   string `json:"kind"` // "build", "prepare", "analyze", "exit", "crash", "timeout"
	What   string `json:"what"` // package or pkg.Test, or the command
	Reason string `json:"reason"`
}

// Report is one bug report wafl wrote, with the copies kept for triage.
type Report struct {
	fieldruns.BugRef
	// Copy is the report's text file copied beside the results, relative
	// to the results directory.
	Copy string `json:"copy,omitempty"`
}

// Result is the hunt's record of one module.
type Result struct {
	Name     string   `json:"name"`
	Module   string   `json:"module"`
	Version  string   `json:"version"`
	Patterns []string `json:"patterns"`
	Skip     string   `json:"skip,omitempty"`
	Short    bool     `json:"short,omitempty"`

	WaflCommit string `json:"wafl_commit"`
	// WaflSource is the last commit that changed wafl's Go code (outside
	// bench/ and examples/): rows made by binaries of different commits
	// with the same code are the same wafl.
	WaflSource  string    `json:"wafl_source,omitempty"`
	WaflVersion string    `json:"wafl_version,omitempty"`
	Date        time.Time `json:"date"`
	Machine     string    `json:"machine"`
	Go          string    `json:"go"`
	// LoadStart and LoadEnd are the 1-minute load averages when the
	// module's run started and ended.
	LoadStart float64 `json:"load_start"`
	LoadEnd   float64 `json:"load_end"`
	// StepTimeout bounds each step; TestTimeout is wafl's --timeout.
	StepTimeout string `json:"step_timeout"`
	TestTimeout string `json:"test_timeout,omitempty"`

	// Status is "ok" or what stopped the run ("fetch: ...").
	Status string `json:"status"`

	// WarmPlain and WarmRace build the plain and race test binaries
	// (-run '^$'), and WarmWafl the instrumented ones (wafl instrument in
	// a work directory of its own), not in the table: the timed steps then
	// measure what a developer or CI runner with a warm build cache pays.
	// Rows made before WarmWafl existed have it not Ran: their prepare
	// includes compiling the instrumented packages.
	WarmPlain Step `json:"warm_plain"`
	WarmRace  Step `json:"warm_race"`
	WarmWafl  Step `json:"warm_wafl"`
	Plain     Step `json:"plain"`
	Race      Step `json:"race"`
	Prepare   Step `json:"prepare"`
	Detect    Step `json:"detect"`
	// PrepareFromStore is set when prepare took the test binaries that
	// WarmWafl built from wafl's build store (its summary says so).
	PrepareFromStore bool `json:"prepare_from_store,omitempty"`

	// Wafl is what prepare and detect did (fieldruns' record).
	Wafl *fieldruns.Result `json:"wafl,omitempty"`

	Reports     []Report    `json:"reports,omitempty"`
	Broken      []Broken    `json:"broken,omitempty"`
	WaflErrors  []WaflError `json:"wafl_errors,omitempty"`
	PlainFailed []string    `json:"plain_failed,omitempty"` // tests failing without wafl, for reading the rest
}

// Matches reports whether r was made for m as the list pins it now (same
// version, packages, skip and mode); a rerun skips a module whose result
// matches.
func (r *Result) Matches(m fieldruns.Module) bool {
	return r != nil && r.Module == m.Path && r.Version == m.Version && slices.Equal(r.Patterns, m.Patterns) &&
		r.Skip == m.Skip && r.Short == m.Short && r.Status != "interrupted"
}

// Options configure a hunt.
type Options struct {
	Wafl        fieldruns.Label
	WaflSource  string        // SourceCommit of the binary's work tree
	Work        string        // work directory: <work>/<name>/{src,wafl,*.out}
	Results     string        // results directory: <results>/<name>.json and <results>/<name>/
	StepTimeout time.Duration // bound of each step
	TestTimeout time.Duration // wafl --timeout (0: wafl's default)
	Runs        int           // wafl detect --runs
	Seed        uint64        // wafl detect --seed
	Log         io.Writer
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format, args...)
	}
}

// ResultPath is where the result of module name is stored.
func ResultPath(results, name string) string { return filepath.Join(results, name+".json") }

// LoadResult reads a stored result; a missing file is nil, nil.
func LoadResult(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// LoadResults reads the stored results of mods (those that have one).
func LoadResults(results string, mods []fieldruns.Module) (map[string]*Result, error) {
	out := map[string]*Result{}
	for _, m := range mods {
		r, err := LoadResult(ResultPath(results, m.Name))
		if err != nil {
			return nil, err
		}
		if r != nil {
			out[m.Name] = r
		}
	}
	return out, nil
}

// Save writes r to its result file.
func (r *Result) Save(results string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return err
	}
	return os.WriteFile(ResultPath(results, r.Name), append(data, '\n'), 0o644)
}

// RunModule runs the hunt's steps on m. A context canceled midway gives a
// result with Status "interrupted", which the caller does not store.
func RunModule(ctx context.Context, m fieldruns.Module, o Options) *Result {
	r := &Result{Name: m.Name, Module: m.Path, Version: m.Version, Patterns: m.Patterns, Skip: m.Skip, Short: m.Short,
		WaflCommit: o.Wafl.Commit, WaflSource: o.WaflSource, WaflVersion: o.Wafl.Version, Date: time.Now().UTC(), Machine: fieldbench.Machine(),
		Go: goVersion(ctx), LoadStart: fieldruns.LoadAvg(), StepTimeout: o.StepTimeout.String(), Status: "ok"}
	if o.TestTimeout > 0 {
		r.TestTimeout = o.TestTimeout.String()
	}
	defer func() {
		r.LoadEnd = fieldruns.LoadAvg()
		if ctx.Err() != nil {
			r.Status = "interrupted"
		}
	}()
	mdir := filepath.Join(o.Work, m.Name)
	src := filepath.Join(mdir, "src")
	o.logf("== %s (%s) load %.2f\n", m.Name, m.ModVersion(), r.LoadStart)
	// The previous run's directories are set aside, not removed (Trash).
	for _, d := range []string{src, WorkDir(o.Work, m.Name), WorkDir(o.Work, m.Name) + ".out", filepath.Join(mdir, "wafl-warm")} {
		if err := Trash(o.Work, d); err != nil {
			r.Status = "work directory: " + err.Error()
			return r
		}
	}
	if err := fieldruns.Source(ctx, m, src); err != nil {
		r.Status = "fetch: " + err.Error()
		return r
	}
	copied := time.Now()
	goTest := func(step string, race, warm bool) Step {
		args := []string{"test", "-count=1"}
		if race {
			args = append(args, "-race")
		}
		if warm {
			args = append(args, "-run", "^$")
		} else {
			args = append(args, m.GoTestFlags()...)
		}
		args = append(args, m.Patterns...)
		o.logf("  %s: go %s\n", step, strings.Join(args, " "))
		out := fieldruns.Run(ctx, src, fieldruns.Env(), o.StepTimeout, "go", args...)
		s := Step{Timing: out.Timing, Ran: true, Output: filepath.Join(mdir, step+".out")}
		all := append(append([]byte{}, out.Stdout...), out.Stderr...)
		os.WriteFile(s.Output, all, 0o644)
		s.Failed = ParseGoTest(string(all))
		if race {
			s.Races = strings.Count(string(all), "WARNING: DATA RACE")
		}
		s.Hung = Hung(all)
		o.logf("    %.1fs wall, %.1fs CPU, exit %d%s, %d failed\n", s.Wall, s.CPU, s.Exit, timedOut(s), len(s.Failed))
		return s
	}
	r.WarmPlain = goTest("warm-plain", false, true)
	r.WarmRace = goTest("warm-race", true, true)
	// wafl keeps no build (neither in the work directory nor in its build
	// store) of sources modified less than 2 s before it: a copy that
	// fresh would make every small module's prepare build again.
	time.Sleep(time.Until(copied.Add(2500 * time.Millisecond)))
	r.WarmWafl = warmWafl(ctx, o, m, src, mdir)
	if ctx.Err() != nil {
		return r
	}
	r.Plain = goTest("plain", false, false)
	r.PlainFailed = r.Plain.Failed
	if ctx.Err() != nil {
		return r
	}
	r.Race = goTest("race", true, false)
	if ctx.Err() != nil {
		return r
	}

	work := WorkDir(o.Work, m.Name)
	fo := fieldruns.Options{Work: mdir, Timeout: o.StepTimeout, TestTimeout: o.TestTimeout, Runs: o.Runs, Seed: o.Seed, Log: o.Log}
	w := fieldruns.RunModule(ctx, m, src, work, o.Wafl, fo)
	r.Wafl = w
	outDir := work + ".out"
	r.Prepare = Step{Timing: w.Prepare, Ran: true, Output: filepath.Join(outDir, "prepare.stderr")}
	if out, err := os.ReadFile(r.Prepare.Output); err == nil {
		r.PrepareFromStore = strings.Contains(string(out), "(binaries from the build store)")
	}
	if w.Detect.Wall > 0 || w.Detect.Exit != 0 || w.Detect.TimedOut {
		r.Detect = Step{Timing: w.Detect, Ran: true, Output: filepath.Join(outDir, "detect.stderr")}
	}
	if ctx.Err() != nil {
		return r
	}
	r.Classify(o.Results, work)
	return r
}

// warmWafl builds the module's instrumented test binaries once, untimed
// in the table, in a work directory that prepare does not use: the go
// build cache then holds the compiled instrumented packages, as it holds
// the plain and race ones after the warm go test steps.
func warmWafl(ctx context.Context, o Options, m fieldruns.Module, src, mdir string) Step {
	dir := filepath.Join(mdir, "wafl-warm")
	Trash(o.Work, dir)
	args := append([]string{"instrument", "--dir", dir}, m.Patterns...)
	o.logf("  warm-wafl: wafl %s\n", strings.Join(args, " "))
	out := fieldruns.Run(ctx, src, fieldruns.Env(), o.StepTimeout, o.Wafl.Binary, args...)
	s := Step{Timing: out.Timing, Ran: true, Output: filepath.Join(mdir, "warm-wafl.out")}
	os.WriteFile(s.Output, append(append([]byte{}, out.Stdout...), out.Stderr...), 0o644)
	Trash(o.Work, dir)
	o.logf("    %.1fs wall, %.1fs CPU, exit %d%s\n", s.Wall, s.CPU, s.Exit, timedOut(s))
	return s
}

// Classify derives the lists for triage from what wafl did (r.Wafl) and
// the outputs kept in its work directory work: the reports, the tests broken
// by delays and wafl's errors, copying the reports and the broken runs' log
// tails into <results>/<name>/. The command's -reclassify runs it again on
// stored results.
func (r *Result) Classify(results, work string) {
	if r.Wafl == nil {
		return
	}
	plainFails := map[string]bool{}
	for _, f := range r.Plain.Failed {
		plainFails[f] = true
	}
	outDir := work + ".out"
	prepErr, _ := os.ReadFile(filepath.Join(outDir, "prepare.stderr"))
	detErr, _ := os.ReadFile(filepath.Join(outDir, "detect.stderr"))
	r.Broken, r.WaflErrors = Classify(r.Wafl.Problems, plainFails)
	r.WaflErrors = append(r.WaflErrors, commandErrors("prepare", r.Prepare, prepErr)...)
	if r.Detect.Ran {
		r.WaflErrors = append(r.WaflErrors, commandErrors("detect", r.Detect, detErr)...)
	}
	r.Reports = nil
	r.keep(results, work)
}

// Hung reports whether go test output shows a test binary that ran until
// its -test.timeout.
func Hung(output []byte) bool { return bytes.Contains(output, []byte("panic: test timed out after")) }

// RefreshHung sets the Hung flags of the plain and -race steps of a result
// stored before they were kept, from the outputs still in the work
// directory.
func (r *Result) RefreshHung() {
	for _, s := range []*Step{&r.Plain, &r.Race} {
		if out, err := os.ReadFile(s.Output); err == nil && s.Output != "" {
			s.Hung = Hung(out)
		}
	}
}

// RefreshCriticalPath fills the critical path (fieldruns.Stats'
// LongestPrepNs … LongestChainTest) and the detection runs' CPU
// (RunsCPUNs, RunsWithCPU) of a result stored before they were
// collected, from the wafl work directory work — only when that directory
// is the one the result was made from: its plans hold the same numbers of
// plans, detection runs and delays. It reports whether it did.
func (r *Result) RefreshCriticalPath(work string) bool {
	if r.Wafl == nil {
		return false
	}
	st, _, err := fieldruns.CollectWork(work)
	w := &r.Wafl.Stats
	if err != nil || st.Plans != w.Plans || st.Runs != w.Runs || st.Delays != w.Delays {
		return false
	}
	w.LongestPrepNs, w.LongestPrepTest = st.LongestPrepNs, st.LongestPrepTest
	w.LongestChainNs, w.LongestChainTest = st.LongestChainNs, st.LongestChainTest
	w.RunsCPUNs, w.RunsWithCPU = st.RunsCPUNs, st.RunsWithCPU
	return true
}

// WorkDir is the wafl work directory of module name under the hunt's work
// directory.
func WorkDir(work, name string) string { return filepath.Join(work, name, "wafl") }

// trashDir is where Trash sets directories aside, under the hunt's work
// directory.
const trashDir = ".trash"

// Trash moves dir, if it exists, into the trash of the hunt's work
// directory work; EmptyTrash removes it once the hunt's steps are done.
// Removing a module's previous directories (thousands of files: its
// source copy, wafl's traces, plans and logs) right before its timed
// steps would charge wafl's steps for it: on ext4 without a journal, file
// creation skips inodes freed in the last minute or more, scanning them
// every time, and wafl creates thousands of files where go test creates
// a few.
func Trash(work, dir string) error {
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return nil
	}
	t := filepath.Join(work, trashDir)
	if err := os.MkdirAll(t, 0o755); err != nil {
		return err
	}
	return os.Rename(dir, filepath.Join(t, strconv.FormatInt(time.Now().UnixNano(), 10)))
}

// EmptyTrash removes what Trash set aside under work.
func EmptyTrash(work string) error { return os.RemoveAll(filepath.Join(work, trashDir)) }

func timedOut(s Step) string {
	if s.TimedOut {
		return " (timed out)"
	}
	return ""
}

// keep copies the report files and the tails of the broken runs' logs into
// <results>/<name>/, so that triage does not depend on the work directory.
func (r *Result) keep(results, work string) {
	dst := filepath.Join(results, r.Name)
	os.RemoveAll(dst)
	for _, b := range r.Wafl.Bugs {
		rep := Report{BugRef: b}
		txt := strings.TrimSuffix(b.File, ".json") + ".txt"
		for _, f := range []string{b.File, txt} {
			data, err := os.ReadFile(filepath.Join(work, f))
			if err != nil {
				continue
			}
			to := filepath.Join(dst, f)
			os.MkdirAll(filepath.Dir(to), 0o755)
			if os.WriteFile(to, data, 0o644) == nil && (f == txt || rep.Copy == "") {
				rep.Copy = filepath.Join(r.Name, f)
			}
		}
		r.Reports = append(r.Reports, rep)
	}
	for i := range r.Broken {
		b := &r.Broken[i]
		for _, line := range b.Runs {
			m := reOutput.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			rel, err := filepath.Rel(work, m[1])
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			if tailCopy(m[1], filepath.Join(dst, rel), logTail) == nil {
				b.Logs = append(b.Logs, filepath.Join(r.Name, rel))
			}
		}
	}
}

// logTail is how much of a broken run's output is kept.
const logTail = 32 << 10

var (
	reOutput = regexp.MustCompile(`output in (\S+?)\)?$`)
	reRun    = regexp.MustCompile(`^run \d+[: ]`)
)

func tailCopy(from, to string, n int64) error {
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		f.Seek(st.Size()-n, io.SeekStart)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

// commandErrors are the errors of a wafl command itself: it ran out of
// time, crashed (a Go panic of the wafl process) or exited with a status
// other than 0 (nothing found) and 1 (bugs found).
func commandErrors(name string, s Step, stderr []byte) []WaflError {
	switch {
	case s.TimedOut:
		return []WaflError{{Kind: "timeout", What: "wafl " + name, Reason: fmt.Sprintf("killed after %.0fs", s.Wall)}}
	case waflPanic(stderr):
		return []WaflError{{Kind: "crash", What: "wafl " + name, Reason: firstPanic(stderr)}}
	case s.Exit != 0 && s.Exit != 1:
		return []WaflError{{Kind: "exit", What: "wafl " + name, Reason: fmt.Sprintf("exit %d: %s", s.Exit, lastLine(stderr))}}
	}
	return nil
}

// waflPanic reports whether stderr holds a Go panic of the wafl process (a
// line "panic: " followed by a goroutine dump naming wafl's packages).
func waflPanic(stderr []byte) bool {
	s := string(stderr)
	i := strings.Index(s, "\npanic: ")
	if i < 0 && strings.HasPrefix(s, "panic: ") {
		i = 0
	}
	return i >= 0 && strings.Contains(s[i:], "github.com/memorder/wafl/")
}

func firstPanic(stderr []byte) string {
	s := string(stderr)
	i := strings.Index(s, "panic: ")
	line, _, _ := strings.Cut(s[i:], "\n")
	return line
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

var (
	reFailTest = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	reFailPkg  = regexp.MustCompile(`^(?:FAIL|ok)\s+(\S+)\s`)
	reNoTest   = regexp.MustCompile(`^FAIL\s+(\S+)\s`)
)

// ParseGoTest returns the failed tests ("pkg.Test", top-level tests only) of
// a go test output without -v, and "pkg" for a package that failed without
// a failing test (its build, a panic outside a test, a timeout).
func ParseGoTest(out string) []string {
	var failed, pending []string
	for _, line := range strings.Split(out, "\n") {
		if m := reFailTest.FindStringSubmatch(line); m != nil {
			if !strings.Contains(m[1], "/") && !strings.HasPrefix(line, " ") {
				pending = append(pending, m[1])
			}
			continue
		}
		if m := reFailPkg.FindStringSubmatch(line + " "); m != nil {
			pkg := m[1]
			if reNoTest.MatchString(line+" ") && len(pending) == 0 {
				failed = append(failed, pkg)
			}
			for _, t := range pending {
				failed = append(failed, pkg+"."+t)
			}
			pending = nil
		}
	}
	return failed
}

// Classify sorts wafl's problem lines ("pkg.Test (phase): reason", see
// fieldruns.ParseSummary) into tests broken by delays and errors of wafl.
// plainFails are the tests (and packages) that failed in plain go test: a
// test failing without delays under wafl is wafl's error only when it passed
// there, a package that did not build instrumented only when it built
// plainly.
func Classify(problems []string, plainFails map[string]bool) ([]Broken, []WaflError) {
	var broken []Broken
	var errs []WaflError
	for _, p := range problems {
		first, rest, _ := strings.Cut(p, "\n")
		name, reason, ok := strings.Cut(first, ": ")
		if !ok {
			continue
		}
		phase := fieldruns.ProblemPhase(first)
		name = strings.TrimSuffix(name, " ("+phase+")")
		pkg, test := splitTest(name)
		full := strings.TrimSpace(reason + "\n" + rest)
		switch phase {
		case "detect":
			b := Broken{Package: pkg, Test: test, Kind: "fail", FailsPlain: plainFails[name] || plainFails[pkg]}
			if strings.Contains(reason, "timed out") {
				b.Kind = "timeout"
			}
			// "failed under delays …:" heads one line per failed run;
			// any other reason ("run 2 timed out (panic: …") is one run
			// whose text may go on over several lines.
			text := reason + "\n" + rest
			if strings.HasPrefix(reason, "failed under delays") {
				text = rest
			}
			for _, l := range strings.Split(text, "\n") {
				switch l = strings.TrimSpace(l); {
				case l == "":
				case reRun.MatchString(l) || len(b.Runs) == 0:
					b.Runs = append(b.Runs, l)
				default:
					b.Runs[len(b.Runs)-1] += " " + l
				}
			}
			broken = append(broken, b)
		case "prepare":
			// detect names a test that failed without delays again
			// ("remembered"): one error per test.
			dup := false
			for _, e := range errs {
				dup = dup || e.Kind == "prepare" && e.What == name
			}
			if !dup && !plainFails[name] && !plainFails[pkg] {
				errs = append(errs, WaflError{Kind: "prepare", What: name,
					Reason: "fails or hangs under instrumentation without delays, passes in plain go test: " + full})
			}
		case "learn":
			// A test that hung or crashed without delays in a recording
			// run of detect, after passing in prepare: triaged as the
			// tests broken by delays are.
			kind := "no-delay fail"
			if strings.HasPrefix(reason, "hung") {
				kind = "no-delay hang"
			}
			broken = append(broken, Broken{Package: pkg, Test: test, Kind: kind, FailsPlain: plainFails[name] || plainFails[pkg],
				Runs: []string{strings.TrimSpace(reason)}})
		case "build", "list":
			if !plainFails[pkg] {
				errs = append(errs, WaflError{Kind: "build", What: name, Reason: full})
			}
		case "analyze":
			if !strings.HasPrefix(reason, "warning: ") {
				errs = append(errs, WaflError{Kind: "analyze", What: name, Reason: full})
			}
		}
	}
	return broken, errs
}

// splitTest splits "pkg.TestX" at the last dot; a name whose last element
// has a slash (a package path alone) has no test.
func splitTest(name string) (string, string) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || strings.Contains(name[i+1:], "/") {
		return name, ""
	}
	return name[:i], name[i+1:]
}

func goVersion(ctx context.Context) string {
	out := fieldruns.Run(ctx, "", fieldruns.Env(), time.Minute, "go", "env", "GOVERSION")
	return strings.TrimSpace(string(out.Stdout))
}

// SourceCommit is the short id of the last commit that changed wafl's Go
// code (Go files, go.mod and go.sum outside bench/ and examples/) in the
// git work tree holding dir, +dirty when such files have uncommitted
// changes; "" outside a work tree.
func SourceCommit(dir string) string {
	spec := []string{"--", ":(top)*.go", ":(top)go.mod", ":(top)go.sum", ":(top,exclude)bench", ":(top,exclude)examples"}
	out, err := exec.Command("git", append([]string{"-C", dir, "log", "-1", "--format=%h"}, spec...)...).Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", append([]string{"-C", dir, "status", "--porcelain", "--untracked-files=no"}, spec...)...).Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "+dirty"
	}
	return c
}
