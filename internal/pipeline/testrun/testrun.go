// Package testrun runs instrumented test binaries the way go test runs
// test binaries: one process per run in the package directory, a
// -test.run pattern that selects exactly the tests asked for, a timeout
// that kills the run's whole process group, and the binary's list of
// tests cached beside it.
package testrun

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

// Run is one execution of one test (or of Tests) in its own process.
type Run struct {
	Binary string
	Dir    string // the package directory: go test runs binaries there
	Test   string
	// Tests, when set instead of Test, are several top-level tests run in
	// one process (prepare's package run).
	Tests []string
	Env   []string // WAFL_* variables, added to the environment
	// Sub and Skip narrow the run inside the test as go test's -run and
	// -skip do: Sub is what --run says below the top level ("a/b" of
	// "TestX/a/b"), Skip the --skip pattern when it names subtests.
	Sub, Skip string
	Timeout   time.Duration
	Output    string   // file receiving the combined stdout and stderr
	Extra     []string // more test binary flags (-test.short, -test.cpu)
	// NetNS starts the process in a network namespace of its own, with
	// only a loopback interface, where the system allows it (Linux; see
	// NetNSAvailable): its ports do not collide with those of processes
	// running beside it.
	NetNS bool
	// Instrumented says the binary links wafl's runtime, which brings up
	// a network namespace's loopback itself (abi.EnvNetNS): a run with
	// NetNS then needs no helper process.
	Instrumented bool
}

// Result is how a test process ended.
type Result struct {
	ExitCode int
	TimedOut bool
	Duration time.Duration
	// CPU is the user and system time of the process and the children
	// it waited for.
	CPU    time.Duration
	Output string // path of the combined output
	// NetNS says the process ran in a network namespace of its own.
	NetNS bool
}

// Start runs the test binary on exactly one top-level test and waits for
// it. A run that exceeds the timeout has its whole process group killed.
func (r Run) Start(ctx context.Context) (Result, error) {
	if err := os.MkdirAll(filepath.Dir(r.Output), 0o755); err != nil {
		return Result{}, err
	}
	out, err := os.Create(r.Output)
	if err != nil {
		return Result{}, err
	}
	defer out.Close()
	args := r.Args()
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Binary, args...)
	cmd.Dir = r.Dir
	cmd.Env = append(os.Environ(), r.Env...)
	cmd.Stdout = out
	cmd.Stderr = out
	setProcessGroup(cmd)
	netns := r.NetNS && isolate(cmd, r.Instrumented)
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	res := Result{Duration: time.Since(start), Output: r.Output, NetNS: netns}
	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
	}
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
		return res, fmt.Errorf("%s: %w", r.Binary, err)
	}
	if ctx.Err() != nil && res.ExitCode != 0 {
		return res, ctx.Err()
	}
	return res, nil
}

// Args are the test binary's arguments for this run.
func (r Run) Args() []string {
	run := "^" + regexp.QuoteMeta(r.Test) + "$"
	if len(r.Tests) > 0 {
		q := make([]string, len(r.Tests))
		for i, t := range r.Tests {
			q[i] = regexp.QuoteMeta(t)
		}
		run = "^(" + strings.Join(q, "|") + ")$"
	}
	if r.Sub != "" {
		run += "/" + r.Sub
	}
	args := []string{
		"-test.run", run,
		"-test.count", "1",
		"-test.v",
	}
	if r.Skip != "" {
		args = append(args, "-test.skip", r.Skip)
	}
	if r.Timeout > 0 {
		// Let the test binary's own alarm fire first: it prints every
		// goroutine's stack, which says where the test hung.
		args = append(args, "-test.timeout", (r.Timeout * 9 / 10).String())
	}
	return append(args, r.Extra...)
}

// List lists the top-level tests of a test binary that match run and
// do not match skip. hash is the binary's (abi.HashFile); when set, the
// binary's list is cached beside it.
//
// Example functions are not tests for wafl (their output is compared, not
// their goroutines'); examples counts those the patterns select.
func List(ctx context.Context, binary, hash, dir, run, skip string) (tests []string, examples int, err error) {
	// -run and -skip take slash-separated patterns, one per level of
	// subtests; wafl lists and starts top-level tests, so the first
	// element selects them and the rest goes to the test binary
	// (splitPattern).
	pattern, _ := SplitPattern(run)
	if pattern == "" {
		pattern = "."
	}
	// The list is kept beside the binary, under the binary's hash and
	// the pattern: a test binary's list of tests does not change until
	// the binary does, and wafl lists on every run.
	cache := binary + ".list"
	key := hash + " " + pattern + "\n"
	out, err := os.ReadFile(cache)
	if hash == "" || err != nil || !bytes.HasPrefix(out, []byte(key)) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, "-test.list", pattern)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if out, err = cmd.Output(); err != nil {
			return nil, 0, fmt.Errorf("%s: listing tests: %w\n%s", binary, err, Tail(stderr.String(), 20))
		}
		if hash != "" {
			_ = os.WriteFile(cache, append([]byte(key), out...), 0o644) // a cache: a failed write lists again next time
		}
	} else {
		out = out[len(key):]
	}
	var skipRE *regexp.Regexp
	if first, rest := SplitPattern(skip); first != "" && rest == "" {
		// A top-level skip; a skip naming subtests goes to the binary.
		if skipRE, err = regexp.Compile(first); err != nil {
			return nil, 0, fmt.Errorf("--skip: %w", err)
		}
	}
	tests, examples = parseList(out, skipRE)
	return tests, examples, nil
}

// parseList returns the test names of a -test.list output, without
// those skipRE matches, each once: a package's internal and external test
// packages may both declare a test of one name (grpc-go's func Test), and
// one -test.run ^Name$ runs both, so they are one test for wafl (two jobs
// would write the same trace file at once).
func parseList(out []byte, skipRE *regexp.Regexp) (tests []string, examples int) {
	seen := make(map[string]bool)
	for _, line := range strings.Split(string(out), "\n") {
		name := strings.TrimSpace(line)
		if strings.HasPrefix(name, "Example") && !strings.ContainsAny(name, " \t") && (skipRE == nil || !skipRE.MatchString(name)) {
			examples++
			continue
		}
		if !strings.HasPrefix(name, "Test") || strings.ContainsAny(name, " \t") || seen[name] {
			continue
		}
		if skipRE != nil && skipRE.MatchString(name) {
			continue
		}
		seen[name] = true
		tests = append(tests, name)
	}
	return tests, examples
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// SplitPattern splits a go test -run/-skip pattern into its top-level
// element and the rest, at the first slash outside brackets and
// parentheses (as the testing package does).
func SplitPattern(p string) (first, rest string) {
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[', '(':
			depth++
		case ']', ')':
			if depth > 0 {
				depth--
			}
		case '/':
			if depth == 0 {
				return p[:i], p[i+1:]
			}
		}
	}
	return p, ""
}
