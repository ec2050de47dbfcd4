// Package pipeline ties wafl's stages together into the prepare and detect
// workflows: instrument and build test binaries, run each test in its own
// process (record mode for preparation, detect mode for detection),
// convert and analyze traces into plans, attribute crashes to injected
// delays, and write reports. The cobra layer in cmd/wafl only parses flags
// and calls this package.
package pipeline

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/memorder/wafl/plans"
)

// Options configure every workflow. The zero value of a field means its
// default.
type Options struct {
	Dir      string   // directory to run in (default: current directory)
	WorkDir  string   // work directory (default: <module root>/.wafl)
	Patterns []string // package patterns, as go test takes them
	Verbose  bool

	// go test knobs passed through.
	Run, Skip string
	Tags      []string
	Timeout   time.Duration // per test run; a run that takes longer is killed
	Parallel  int           // test runs in parallel

	// Analysis parameters (zero: default).
	NearMiss, MinDelay, MaxDelay time.Duration
	Alpha                        float64

	// Detection.
	Runs    int
	Seed    uint64
	SeedSet bool
	Decay   float64
	// CapGoroutine and CapRun cap the total delay per goroutine and per
	// run; zero keeps the plan's.
	CapGoroutine, CapRun time.Duration
	Ablate               []string // parts of the algorithm turned off: interference, hb, decay
	JSON                 bool     // print the report JSON to stdout
	SARIF                string   // write SARIF to this file

	Stdout, Stderr io.Writer
}

// Inherit copies the persistent (global) flags from common.
func (o *Options) Inherit(common *Options) {
	o.Dir = common.Dir
	o.WorkDir = common.WorkDir
	o.Verbose = common.Verbose
}

// params returns the plan parameters the options select.
func (o *Options) params() plans.Params {
	p := plans.DefaultParams()
	if o.NearMiss > 0 {
		p.NearMissNs = int64(o.NearMiss)
	}
	if o.Alpha > 0 {
		p.Alpha = o.Alpha
	}
	if o.MinDelay > 0 {
		p.MinDelayNs = int64(o.MinDelay)
	}
	if o.MaxDelay > 0 {
		p.MaxDelayNs = int64(o.MaxDelay)
	}
	if o.Decay > 0 {
		p.Decay = o.Decay
	}
	return p
}

// applyDetect overrides a plan's detection parameters with the options
// that were set.
func (o *Options) applyDetect(p *plans.Params) {
	if o.Decay > 0 {
		p.Decay = o.Decay
	}
	if o.CapGoroutine > 0 {
		p.MaxDelayPerGoroutineNs = int64(o.CapGoroutine)
	}
	if o.CapRun > 0 {
		p.MaxDelayPerRunNs = int64(o.CapRun)
	}
}

// setup fills defaults and resolves the module root and work directory.
func (o *Options) setup() (*workspace, error) {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Runs < 1 {
		o.Runs = 3
	}
	if len(o.Patterns) == 0 {
		o.Patterns = []string{"./..."}
	}
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := moduleRoot(dir)
	if err != nil {
		return nil, err
	}
	work := o.WorkDir
	if work == "" {
		work = filepath.Join(root, ".wafl")
	}
	if work, err = filepath.Abs(work); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("work directory: %v", err)
	}
	// Keep the work directory out of version control.
	gi := filepath.Join(work, ".gitignore")
	if _, err := os.Stat(gi); os.IsNotExist(err) {
		_ = os.WriteFile(gi, []byte("# wafl's work directory\n*\n"), 0o644)
	}
	return &workspace{dir: dir, root: root, work: work}, nil
}

// moduleRoot returns the root of the main module containing dir.
func moduleRoot(dir string) (string, error) {
	cmd := exec.Command("go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("%s: go env GOMOD: %s", dir, msg)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("%s is not inside a Go module (no go.mod found); wafl runs a module's tests", dir)
	}
	return filepath.Dir(gomod), nil
}

// workspace is the resolved layout of one invocation (docs/design.md).
type workspace struct {
	dir  string // where wafl runs (package patterns are relative to it)
	root string // module root
	work string // work directory
}

func (w *workspace) path(elem ...string) string {
	return filepath.Join(append([]string{w.work}, elem...)...)
}

func (w *workspace) tracePath(pkg, test string) string {
	return w.path("traces", filepath.FromSlash(pkg), test+".arrows")
}

func (w *workspace) rawTracePath(pkg, test string) string {
	return w.path("traces", filepath.FromSlash(pkg), test+".raw")
}

func (w *workspace) planPath(pkg, test string) string {
	return w.path("plans", filepath.FromSlash(pkg), test+".json")
}

func (w *workspace) logPath(pkg, test, suffix string) string {
	return w.path("logs", filepath.FromSlash(pkg), test+"."+suffix)
}

func (w *workspace) reportDir() string { return w.path("reports") }
