package fieldruns

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memorder/wafl/bench/fieldbench"
)

// Options configure a field run.
type Options struct {
	Work        string        // work directory (one subdirectory per module)
	Timeout     time.Duration // bound of each wafl command (prepare, detect) per module
	TestTimeout time.Duration // wafl --timeout (per test run)
	Runs        int           // wafl detect --runs (0: wafl's default)
	Seed        uint64        // wafl detect --seed
	Log         io.Writer
}

// WaflFlags are the flags every wafl command gets besides --dir.
func (o Options) WaflFlags() []string {
	var f []string
	if o.TestTimeout > 0 {
		f = append(f, "--timeout", o.TestTimeout.String())
	}
	return f
}

// DetectFlags are the extra flags of wafl detect.
func (o Options) DetectFlags() []string {
	f := []string{"--seed", strconv.FormatUint(o.Seed, 10)}
	if o.Runs > 0 {
		f = append(f, "--runs", strconv.Itoa(o.Runs))
	}
	return f
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format, args...)
	}
}

// Output is a finished command.
type Output struct {
	Stdout, Stderr []byte
	Timing
}

// Run runs name args in dir with env, killing its whole process group when
// the timeout passes, and measures wall and CPU time.
func Run(ctx context.Context, dir string, env []string, timeout time.Duration, name string, args ...string) Output {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	o := Output{Stdout: out.Bytes(), Stderr: errb.Bytes()}
	o.Wall = time.Since(start).Seconds()
	o.Exit = -1
	if ps := cmd.ProcessState; ps != nil {
		o.Exit = ps.ExitCode()
		// wait4's usage covers the process and every descendant it waited
		// for (the go command's compilers, wafl's test binaries).
		o.CPU = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	if ctx.Err() != nil {
		o.TimedOut = true
		o.Exit = -1
	}
	if err != nil && o.Exit == 0 {
		o.Exit = -1
		o.Stderr = append(o.Stderr, []byte("\n"+err.Error())...)
	}
	return o
}

// Source fetches m through the module proxy and copies it into dir
// (replacing what was there), writable.
func Source(ctx context.Context, m Module, dir string) error {
	cache, err := fieldbench.Download(ctx, m.ModVersion(), 3)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := fieldbench.CopyTree(cache, dir); err != nil {
		return err
	}
	// A version without a go.mod (+incompatible, or older than modules)
	// gets a minimal one: its path, and the language version the go command
	// assumes for such a module, so that no semantics change (loop
	// variables); -mod=mod finds its requirements.
	gomod := filepath.Join(dir, "go.mod")
	if _, err := os.Stat(gomod); os.IsNotExist(err) {
		return os.WriteFile(gomod, []byte("module "+m.Path+"\n\ngo 1.16\n"), 0o644)
	}
	return dropLocalReplaces(ctx, dir)
}

// dropLocalReplaces removes the replace directives of dir's go.mod that
// point into the module's repository (../metric in a multi-module repository
// such as OpenTelemetry's): the copy has no siblings, and a dependent module
// would ignore them too, taking the required versions from the proxy.
func dropLocalReplaces(ctx context.Context, dir string) error {
	out := Run(ctx, dir, Env(), time.Minute, "go", "mod", "edit", "-json")
	if out.Exit != 0 {
		return fmt.Errorf("go mod edit -json: %s", lastLine(out.Stderr))
	}
	var mod struct {
		Replace []struct {
			Old struct{ Path, Version string }
			New struct{ Path, Version string }
		}
	}
	if err := json.Unmarshal(out.Stdout, &mod); err != nil {
		return fmt.Errorf("go mod edit -json: %w", err)
	}
	args := []string{"mod", "edit"}
	for _, r := range mod.Replace {
		if r.New.Version == "" && (strings.HasPrefix(r.New.Path, "./") || strings.HasPrefix(r.New.Path, "../") || filepath.IsAbs(r.New.Path)) {
			old := r.Old.Path
			if r.Old.Version != "" {
				old += "@" + r.Old.Version
			}
			args = append(args, "-dropreplace="+old)
		}
	}
	if len(args) == 2 {
		return nil
	}
	if out := Run(ctx, dir, Env(), time.Minute, "go", args...); out.Exit != 0 {
		return fmt.Errorf("go mod edit: %s", lastLine(out.Stderr))
	}
	return nil
}

// Env is the environment of every command: no workspace, the local
// toolchain, go.sum completed as needed (fieldbench.GoEnv).
func Env() []string { return fieldbench.GoEnv() }

// RunModule runs `wafl prepare` then `wafl detect` with one binary on the
// module copy src, with the wafl work directory work (removed first), and
// collects the results.
func RunModule(ctx context.Context, m Module, src, work string, l Label, o Options) *Result {
	r := &Result{Module: m.Path, Version: m.Version, Status: "ok", Skip: m.Skip}
	if err := os.RemoveAll(work); err != nil {
		r.Status = "error: " + err.Error()
		return r
	}
	logDir := work + ".out"
	os.MkdirAll(logDir, 0o755)
	save := func(step string, out Output) {
		os.WriteFile(filepath.Join(logDir, step+".stdout"), out.Stdout, 0o644)
		os.WriteFile(filepath.Join(logDir, step+".stderr"), out.Stderr, 0o644)
	}
	base := append(append([]string{"--dir", work}, o.WaflFlags()...), m.TestFlags()...)

	o.logf("  %s: wafl prepare %s\n", l.Name, strings.Join(m.Patterns, " "))
	args := append(append([]string{"prepare"}, base...), m.Patterns...)
	prep := Run(ctx, src, Env(), o.Timeout, l.Binary, args...)
	save("prepare", prep)
	r.Prepare = prep.Timing
	ps := ParseSummary(string(prep.Stderr))
	r.Packages, r.Built, r.TestsRun, r.WithCandidates = ps.Packages, ps.Built, ps.TestsRun, ps.WithCandidates
	var problems []string
	for _, p := range ps.Problems {
		problems = append(problems, p)
	}
	switch {
	case prep.TimedOut:
		r.Status = fmt.Sprintf("prepare timed out after %s", o.Timeout)
	case prep.Exit != 0 || !ps.Found:
		r.Status = fmt.Sprintf("prepare exit %d: %s", prep.Exit, lastLine(prep.Stderr))
	}
	o.logf("    %.1fs wall, %.1fs CPU, exit %d\n", prep.Wall, prep.CPU, prep.Exit)

	if r.Status == "ok" {
		o.logf("  %s: wafl detect\n", l.Name)
		args := append(append(append([]string{"detect"}, base...), o.DetectFlags()...), "--json")
		args = append(args, m.Patterns...)
		det := Run(ctx, src, Env(), o.Timeout, l.Binary, args...)
		save("detect", det)
		r.Detect = det.Timing
		ds := ParseSummary(string(det.Stderr))
		r.DetectRuns, r.DelaysSummary, r.BugsSummary = ds.Runs, ds.Delays, ds.Bugs
		for _, p := range ds.Problems {
			if !contains(problems, p) {
				problems = append(problems, p)
			}
		}
		switch {
		case det.TimedOut:
			r.Status = fmt.Sprintf("detect timed out after %s", o.Timeout)
		case det.Exit == 1:
			// bugs found: the table shows them
		case det.Exit != 0 || !ds.Found:
			r.Status = fmt.Sprintf("detect exit %d: %s", det.Exit, lastLine(det.Stderr))
		}
		if len(bytes.TrimSpace(det.Stdout)) > 0 {
			if bugs, err := ParseReports(det.Stdout); err == nil {
				r.BugsSummary = max(r.BugsSummary, len(bugs))
			}
		}
		o.logf("    %.1fs wall, %.1fs CPU, exit %d, %d runs, %d delays, %d bugs\n",
			det.Wall, det.CPU, det.Exit, ds.Runs, ds.Delays, ds.Bugs)
	}
	sort.Strings(problems)
	r.Problems = problems
	for _, p := range problems {
		switch ProblemPhase(p) {
		case "build", "list":
			r.BuildFailures++
		default:
			r.TestFailures++
		}
	}
	st, bugs, err := CollectWork(work)
	r.Stats, r.Bugs = st, bugs
	if err != nil && r.Status == "ok" {
		r.Status = "reading work directory: " + err.Error()
	}
	return r
}

// Warm builds every test binary of the module plainly once (no test runs),
// so that neither label pays for compiling the dependencies and a module
// that does not build even without wafl is told apart.
func Warm(ctx context.Context, m Module, src string, timeout time.Duration) Output {
	args := append([]string{"test", "-count=1", "-run", "^$"}, m.Patterns...)
	return Run(ctx, src, Env(), timeout, "go", args...)
}

// GoTest runs the module's tests plainly: `go test -count=1 PATTERNS`.
func GoTest(ctx context.Context, m Module, src string, timeout time.Duration) Output {
	args := append(append([]string{"test", "-count=1"}, m.GoTestFlags()...), m.Patterns...)
	return Run(ctx, src, Env(), timeout, "go", args...)
}

// Prepare runs `wafl prepare` alone with a fresh work directory (baseline).
func Prepare(ctx context.Context, m Module, src, work string, l Label, o Options) Output {
	os.RemoveAll(work)
	defer os.RemoveAll(work)
	args := append(append(append([]string{"prepare", "--dir", work}, o.WaflFlags()...), m.TestFlags()...), m.Patterns...)
	return Run(ctx, src, Env(), o.Timeout, l.Binary, args...)
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// LoadAvg is the 1-minute load average (0 where /proc/loadavg is missing),
// which the harness writes next to every measurement.
func LoadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
