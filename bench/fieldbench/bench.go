package fieldbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options of one bench run.
type Options struct {
	Wafl        string        // wafl binary
	WaflCommit  string        // shown in the results
	Tries       int           // independent wafl tries (fresh work directory each)
	Runs        int           // detect runs per try at most (--runs 1 each, plan carried over)
	PlainRuns   int           // plain runs of the uninstrumented test at most
	PlainBudget time.Duration // ... and at most this long in total
	RaceRuns    int           // runs of the -race binary
	Work        string        // work directory of this bug (kept for diagnosis)
	Log         io.Writer
}

// Try is one wafl try: a fresh prepare and up to Options.Runs detect runs.
type Try struct {
	Exposed int `json:"exposed"` // detect run that reported the bug; 0: not within the runs
	// Prep is set when the delay-free preparation run already crashed with
	// the bug's panic and wafl reported it (exit 1): exposed in 1 run.
	Prep    bool   `json:"prep,omitempty"`
	Runs    int    `json:"runs"` // detect runs made
	Panic   string `json:"panic,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Delayed string `json:"delayed,omitempty"`
	Failing string `json:"failing,omitempty"`
	Other   string `json:"other,omitempty"` // a report that is not the manifest's panic
	// Unattributed counts detect runs that crashed with the manifest's panic
	// but that wafl did not report as a bug (exit 0: "not a MEMORDER bug").
	Unattributed int     `json:"unattributed,omitempty"`
	Candidates   string  `json:"candidates,omitempty"`
	Delays       int     `json:"delays"` // delays injected, all detect runs
	TestSecs     float64 `json:"test_secs"`
	WallSecs     float64 `json:"wall_secs"`
	Err          string  `json:"error,omitempty"`
	Notes        string  `json:"notes,omitempty"`
}

// BugResult is what the bench measured for one manifest.
type BugResult struct {
	Name        string  `json:"name"`
	Date        string  `json:"date"`
	Machine     string  `json:"machine"`
	Go          string  `json:"go"`
	WaflCommit  string  `json:"wafl_commit"`
	Error       string  `json:"error,omitempty"` // setup failed: nothing else is valid
	BuildSecs   float64 `json:"plain_build_secs"`
	PlainRuns   int     `json:"plain_runs"`
	PlainFails  int     `json:"plain_fails"`
	PlainPanics int     `json:"plain_panics"` // failures showing the manifest's panic
	PlainSecs   float64 `json:"plain_secs"`   // median wall time of one plain run
	PlainFirst  string  `json:"plain_first_failure,omitempty"`
	RaceRuns    int     `json:"race_runs"`
	RaceReports int     `json:"race_reports"`
	RacePanics  int     `json:"race_panics"`
	Tries       []Try   `json:"tries"`
}

func (o *Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// Machine describes this machine in one line.
func Machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "model name") {
				if _, v, ok := strings.Cut(line, ":"); ok {
					model = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s/%s", runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH)
}

func goVersion(ctx context.Context) string {
	r := Cmd{Env: GoEnv(), Timeout: time.Minute}.Run(ctx, "go", "env", "GOVERSION")
	return strings.TrimSpace(string(r.Out))
}

// Bench measures one bug.
func Bench(ctx context.Context, m *Manifest, o Options) *BugResult {
	res := &BugResult{
		Name:       m.Name,
		Date:       time.Now().UTC().Format("2006-01-02"),
		Machine:    Machine(),
		Go:         goVersion(ctx),
		WaflCommit: o.WaflCommit,
	}
	if err := os.MkdirAll(o.Work, 0o755); err != nil {
		res.Error = err.Error()
		return res
	}
	logs := filepath.Join(o.Work, "logs")
	os.MkdirAll(logs, 0o755)
	save := func(name string, data ...[]byte) {
		os.WriteFile(filepath.Join(logs, name), bytes.Join(data, []byte("\n--- stderr ---\n")), 0o644)
	}

	o.logf("%s: fetching %s", m.Name, m.ModVersion())
	src, err := PrepareSource(ctx, m, o.Work)
	if err != nil {
		res.Error = err.Error()
		return res
	}

	// Plain binary: also completes go.sum for everything after it.
	plainBin := filepath.Join(o.Work, "plain.test")
	o.logf("%s: building the plain test binary", m.Name)
	br := BuildTest(ctx, src, m, false, plainBin)
	save("build-plain.log", br.Out)
	res.BuildSecs = br.Elapsed.Seconds()
	if br.Code != 0 {
		res.Error = "plain build failed: " + firstLines(br.Out, 5)
		return res
	}
	testArgs := []string{"-test.run", m.RunPattern(), "-test.count", "1", "-test.v",
		"-test.timeout", (m.Timeout * 9 / 10).String()}

	// Plain runs.
	var secs []float64
	deadline := time.Now().Add(o.PlainBudget)
	for i := 0; i < o.PlainRuns && (i == 0 || time.Now().Before(deadline)); i++ {
		r := Cmd{Dir: src.PkgDir, Env: GoEnv(), Timeout: m.Timeout}.Run(ctx, plainBin, testArgs...)
		res.PlainRuns++
		secs = append(secs, r.Elapsed.Seconds())
		if r.Code != 0 {
			res.PlainFails++
			if m.PanicIn(string(r.Out)) {
				res.PlainPanics++
			}
			if res.PlainFirst == "" {
				res.PlainFirst = failureLine(r)
				save("plain-first-failure.log", r.Out)
			}
		}
	}
	res.PlainSecs = median(secs)
	o.logf("%s: plain: %d/%d runs failed (%d with %q), median %.2fs", m.Name, res.PlainFails, res.PlainRuns, res.PlainPanics, m.Panic, res.PlainSecs)

	// Race detector.
	raceBin := filepath.Join(o.Work, "race.test")
	rb := BuildTest(ctx, src, m, true, raceBin)
	save("build-race.log", rb.Out)
	if rb.Code == 0 {
		for i := 0; i < o.RaceRuns; i++ {
			r := Cmd{Dir: src.PkgDir, Env: GoEnv(), Timeout: 3 * m.Timeout}.Run(ctx, raceBin, testArgs...)
			res.RaceRuns++
			if bytes.Contains(r.Out, []byte("WARNING: DATA RACE")) {
				res.RaceReports++
				if res.RaceReports == 1 {
					save("race-report.log", r.Out)
				}
			}
			if m.PanicIn(string(r.Out)) && r.Code != 0 {
				res.RacePanics++
			}
		}
	}
	o.logf("%s: race: %d/%d runs report a data race, %d panicked", m.Name, res.RaceReports, res.RaceRuns, res.RacePanics)

	// wafl tries.
	if bad, why := m.NotExposable(); bad {
		o.logf("%s: not exposable by delays (%s): wafl not run", m.Name, why)
		return res
	}
	for t := 1; t <= o.Tries; t++ {
		try := waflTry(ctx, m, o, src, t)
		res.Tries = append(res.Tries, try)
		outcome := "not exposed"
		if try.Exposed > 0 {
			outcome = fmt.Sprintf("exposed at run %d (%s; %s)", try.Exposed, try.Panic, try.Delayed)
		}
		o.logf("%s: try %d: %s, candidates %q, %d delays, %d unattributed crashes, %.1fs of test runs, %.1fs wall %s%s",
			m.Name, t, outcome, try.Candidates, try.Delays, try.Unattributed, try.TestSecs, try.WallSecs, try.Err, try.Notes)
	}
	return res
}

var (
	candLine  = regexp.MustCompile(`(\d+ events?, \d+ candidate pairs? at \d+ locations?)`)
	delaysRe  = regexp.MustCompile(`(\d+) delays? injected`)
	timeLine  = regexp.MustCompile(`(?m)^time:.*$`)
	phaseTime = regexp.MustCompile(`\b(prepare|detect) ((?:[0-9.]+(?:ns|us|µs|ms|s|m|h))+)`)
)

// testSeconds sums the prepare/detect durations of wafl's "time:" line
// (test runs only, instrumented builds excluded).
func testSeconds(out []byte) float64 {
	total := 0.0
	for _, line := range timeLine.FindAll(out, -1) {
		for _, m := range phaseTime.FindAllSubmatch(line, -1) {
			if d, err := time.ParseDuration(string(m[2])); err == nil {
				total += d.Seconds()
			}
		}
	}
	return total
}

type waflReport struct {
	Bugs []struct {
		Kind    string `json:"kind"`
		Panic   string `json:"panic"`
		Delayed *struct {
			File string `json:"file"`
			Line int    `json:"line"`
			Expr string `json:"expr"`
			Op   string `json:"op"`
		} `json:"delayed"`
		Failing *struct {
			File string `json:"file"`
			Line int    `json:"line"`
			Expr string `json:"expr"`
			Op   string `json:"op"`
		} `json:"failing"`
	} `json:"bugs"`
}

// prepBugRe matches wafl prepare's line for a crash of the preparation run.
var prepBugRe = regexp.MustCompile(`MEMORDER panic in the delay-free preparation run at (\S+) \(([^)]*)\)`)

func waflTry(ctx context.Context, m *Manifest, o Options, src *Source, t int) (try Try) {
	mf := m
	dir := filepath.Join(o.Work, fmt.Sprintf("wafl.try%d", t))
	os.RemoveAll(dir)
	logs := filepath.Join(o.Work, "logs")
	start := time.Now()
	defer func() { try.WallSecs = time.Since(start).Seconds() }()
	common := []string{"--run", m.RunPattern(), "--dir", dir, "--timeout", m.Timeout.String()}
	for _, pat := range strings.Fields(m.Instrument) {
		common = append(common, "--instrument", pat)
	}
	wc := Cmd{Dir: src.Root, Env: GoEnv(), Timeout: 20*time.Minute + 2*m.Timeout}

	p := wc.Run(ctx, o.Wafl, append(append([]string{"prepare"}, common...), m.Package)...)
	os.WriteFile(filepath.Join(logs, fmt.Sprintf("try%d.prepare.log", t)), p.Out, 0o644)
	if c := candLine.FindSubmatch(p.Out); c != nil {
		try.Candidates = string(c[1])
	}
	try.TestSecs += testSeconds(p.Out)
	if p.Code == 1 {
		// The delay-free preparation run crashed with a MEMORDER panic at
		// an instrumented site: wafl reports it as a bug exposed without
		// delay (docs/report-format.md, "Crediting real crashes").
		if m := prepBugRe.FindSubmatch(p.Out); m != nil && mf.PanicIn(string(m[2])) {
			try.Prep, try.Panic, try.Kind = true, string(m[2]), "preparation-run"
			try.Failing = filepath.Base(string(m[1]))
			return try
		}
	}
	if p.Code != 0 {
		try.Err = fmt.Sprintf("prepare exit %d%s: %s", p.Code, timedOut(p), lastLines(p.Out, 3))
		return try
	}
	if try.Candidates == "" {
		try.Notes = "prepare: " + lastLines(p.Out, 4)
	}
	for run := 1; run <= o.Runs; run++ {
		d := wc.RunSplit(ctx, o.Wafl, append(append([]string{"detect", "--runs", "1", "--json"}, common...), m.Package)...)
		try.Runs = run
		os.WriteFile(filepath.Join(logs, fmt.Sprintf("try%d.detect%d.json", t, run)), d.Out, 0o644)
		os.WriteFile(filepath.Join(logs, fmt.Sprintf("try%d.detect%d.log", t, run)), d.Err, 0o644)
		try.TestSecs += testSeconds(d.Err)
		if n := delaysRe.FindSubmatch(d.Err); n != nil {
			v, _ := strconv.Atoi(string(n[1]))
			try.Delays += v
		}
		switch d.Code {
		case 0:
			for _, line := range strings.Split(string(d.Err), "\n") {
				// "panic: runtime error: invalid memory address or nil
				// pointer dereference" holds the manifest's "nil pointer
				// dereference" but not "panic: " right before it.
				if strings.Contains(line, "panic: ") && m.PanicIn(line) && strings.Contains(line, "not a MEMORDER bug") {
					try.Unattributed++
					break
				}
			}
			continue
		case 1:
			var rep waflReport
			if err := json.Unmarshal(d.Out, &rep); err != nil {
				try.Err = "detect exit 1 without a JSON report: " + err.Error()
				return try
			}
			for _, b := range rep.Bugs {
				if m.PanicIn(b.Panic) {
					try.Exposed, try.Panic, try.Kind = run, b.Panic, b.Kind
					if b.Delayed != nil {
						try.Delayed = fmt.Sprintf("%s:%d %s (%s)", filepath.Base(b.Delayed.File), b.Delayed.Line, b.Delayed.Expr, b.Delayed.Op)
					}
					if b.Failing != nil {
						try.Failing = fmt.Sprintf("%s:%d %s (%s)", filepath.Base(b.Failing.File), b.Failing.Line, b.Failing.Expr, b.Failing.Op)
					}
					return try
				}
				try.Other = b.Kind + ": " + b.Panic
			}
		default:
			try.Err = fmt.Sprintf("detect exit %d%s: %s", d.Code, timedOut(d), lastLines(d.Err, 3))
			return try
		}
	}
	return try
}

func timedOut(r Result) string {
	if r.TimedOut {
		return " (timed out)"
	}
	return ""
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func firstLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// failureLine picks the most telling line of a failed run's output.
func failureLine(r Result) string {
	if r.TimedOut {
		return "timed out"
	}
	for _, line := range strings.Split(string(r.Out), "\n") {
		if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
			return strings.TrimSpace(line)
		}
	}
	for _, line := range strings.Split(string(r.Out), "\n") {
		if strings.Contains(line, "--- FAIL") || strings.Contains(line, "_test.go:") {
			return strings.TrimSpace(line)
		}
	}
	return fmt.Sprintf("exit status %d", r.Code)
}
