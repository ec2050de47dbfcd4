package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// testRun is one execution of one test in its own process.
type testRun struct {
	Binary  string
	Dir     string // the package directory: go test runs binaries there
	Test    string
	Env     []string // WAFL_* variables, added to the environment
	Timeout time.Duration
	Output  string // file receiving the combined stdout and stderr
}

// runResult is how a test process ended.
type runResult struct {
	ExitCode int
	TimedOut bool
	Duration time.Duration
	Output   string // path of the combined output
}

// start runs the test binary on exactly one top-level test and waits for
// it. A run that exceeds the timeout has its whole process group killed.
func (r testRun) run(ctx context.Context) (runResult, error) {
	if err := os.MkdirAll(filepath.Dir(r.Output), 0o755); err != nil {
		return runResult{}, err
	}
	out, err := os.Create(r.Output)
	if err != nil {
		return runResult{}, err
	}
	defer out.Close()
	args := []string{
		"-test.run", "^" + regexp.QuoteMeta(r.Test) + "$",
		"-test.count", "1",
		"-test.v",
	}
	if r.Timeout > 0 {
		// Let the test binary's own alarm fire first: it prints every
		// goroutine's stack, which says where the test hung.
		args = append(args, "-test.timeout", (r.Timeout * 9 / 10).String())
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Binary, args...)
	cmd.Dir = r.Dir
	cmd.Env = append(os.Environ(), r.Env...)
	cmd.Stdout = out
	cmd.Stderr = out
	setProcessGroup(cmd)
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	res := runResult{Duration: time.Since(start), Output: r.Output}
	// Processes the test started and left behind die with the run.
	_ = killProcessGroup(cmd)
	if ctx.Err() == context.DeadlineExceeded {
		res.TimedOut = true
		res.ExitCode = -1
		return res, nil
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if !ee.Exited() {
			res.ExitCode = -1
		}
		if out, _ := os.ReadFile(r.Output); bytes.Contains(out, []byte("panic: test timed out after")) {
			res.TimedOut = true
		}
	default:
		return res, fmt.Errorf("running %s: %v", r.Binary, err)
	}
	if ctx.Err() != nil && res.ExitCode != 0 {
		return res, ctx.Err()
	}
	return res, nil
}

// listTests lists the top-level tests of a test binary that match run and
// do not match skip.
func listTests(ctx context.Context, binary, dir, run, skip string) ([]string, error) {
	pattern := run
	if pattern == "" {
		pattern = "."
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "-test.list", pattern)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing tests of %s: %v\n%s", binary, err, tail(stderr.String(), 20))
	}
	var skipRE *regexp.Regexp
	if skip != "" {
		// go test's -skip takes slash-separated patterns per level; wafl
		// runs top-level tests, so the first element decides.
		first, _, _ := strings.Cut(skip, "/")
		if skipRE, err = regexp.Compile(first); err != nil {
			return nil, fmt.Errorf("--skip: %v", err)
		}
	}
	var tests []string
	for _, line := range strings.Split(string(out), "\n") {
		name := strings.TrimSpace(line)
		if !strings.HasPrefix(name, "Test") || strings.ContainsAny(name, " \t") {
			continue
		}
		if skipRE != nil && skipRE.MatchString(name) {
			continue
		}
		tests = append(tests, name)
	}
	return tests, nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
