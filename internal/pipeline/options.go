package pipeline

import (
	"io"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/internal/pipeline/workdir"
	"github.com/memorder/wafl/plans"
)

// Defaults of the workflow options (the CLI shows them).
const (
	DefaultTimeout = 10 * time.Minute // per test run
	DefaultRuns    = 3                // detection runs per test
)

// Common are the options of every workflow: where it runs, its work
// directory and output streams. The zero value of a field means its
// default.
type Common struct {
	Dir     string // directory to run in (default: current directory)
	WorkDir string // work directory (default: <module root>/.wafl)
	Verbose bool
	// Self is how reproduce lines name wafl (default "wafl"): the CLI sets
	// the path it was started by when that was not a bare name.
	Self string
	// Version is wafl's version, for reports that name the tool (SARIF).
	Version string

	Stdout, Stderr io.Writer // default: discard
}

// Packages select the packages to instrument and build.
type Packages struct {
	Patterns []string // package patterns, as go test takes them (default ./...)
	Tags     []string // build tags
	// Instrument are import path patterns of dependency packages outside
	// the main module to instrument too (--instrument; default none: the
	// main module's packages only).
	Instrument []string
}

// Tests select the tests of the built packages and say how each runs: go
// test knobs passed through.
type Tests struct {
	Run, Skip string
	Timeout   time.Duration // per test run; a run that takes longer is killed (default DefaultTimeout)
	Parallel  int           // packages whose tests run at once, a package's tests one after another (default 1)
	// Procs is the most test processes that run at once: beyond
	// Parallel, more of a package's tests start while a CPU is idle
	// (gate.go). At most Parallel: none beyond them.
	Procs int
	// HostNetwork keeps every test process on the host's network. By
	// default a process that starts while another test process of its
	// package runs gets a network namespace of its own with only
	// loopback, where the system allows it (Linux), so that tests
	// listening on fixed ports do not collide (gate.go).
	HostNetwork bool
	// RetryFailing runs tests that failed or hung without delays on the
	// same build again (by default they are remembered and skipped).
	RetryFailing bool
	// Short and CPU are go test's -short and -cpu, passed to every test
	// run as -test.short and -test.cpu.
	Short bool
	CPU   string
	// Shard runs only this shard's share of the tests (--shard i/n).
	Shard Shard
}

// binaryArgs are the test binary flags the options add to every run.
func (t *Tests) binaryArgs() []string {
	var args []string
	if t.Short {
		args = append(args, "-test.short")
	}
	if t.CPU != "" {
		args = append(args, "-test.cpu", t.CPU)
	}
	return args
}

// Reports say how bug reports are printed.
type Reports struct {
	JSON  bool   // print the report JSON to stdout
	SARIF string // write SARIF to this file
}

// InstrumentOptions configure Instrument.
type InstrumentOptions struct {
	Common
	Packages
}

// PrepareOptions configure Prepare.
type PrepareOptions struct {
	Common
	Packages
	Tests
	// Params override the defaults of new plans' parameters.
	Params plans.Overrides
	// PerTest runs every test's preparation run in a process of its own;
	// by default the tests of a package
	// share one process and only those that crash, hang, fail or exit
	// run again alone (pkgprep.go).
	PerTest bool
	// Basic is basic mode (--ablate basic, the thesis's WAFLBASIC):
	// prepare makes no recording run and writes an empty plan marked
	// basic; detection runs find candidate pairs online (basic.go).
	Basic bool
}

// DetectOptions configure Detect. A test without a current plan is
// prepared first, with the embedded PrepareOptions; Params' detection-run
// fields also override existing plans' (plans.Overrides.ApplyDetection).
type DetectOptions struct {
	PrepareOptions
	Runs int // detection runs per test (default DefaultRuns)
	// TestsPerPair is how many of a package's tests delay one candidate
	// pair in a call (share.go); below 1, every test with the pair.
	TestsPerPair int
	Seed         uint64
	SeedSet      bool
	Ablate       abi.Ablation // parts of the algorithm turned off (abi.Ablations)
	Reports
}

// AnalyzeOptions configure AnalyzeFiles.
type AnalyzeOptions struct {
	Common
	Params plans.Overrides
}

// ReportOptions configure PrintReports.
type ReportOptions struct {
	Common
	Reports
	HTML string // also write the bugs as one self-contained HTML page here
}

func (p *Packages) defaults() {
	if len(p.Patterns) == 0 {
		p.Patterns = []string{"./..."}
	}
}

func (t *Tests) defaults() {
	if t.Parallel < 1 {
		t.Parallel = 1
	}
	if t.Timeout <= 0 {
		t.Timeout = DefaultTimeout
	}
}

// streams fills the default output streams.
func (c *Common) streams() {
	if c.Self == "" {
		c.Self = "wafl"
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
}

// workspace fills the default streams and opens the work directory.
func (c *Common) workspace() (*workdir.Dir, error) {
	c.streams()
	return workdir.Open(c.Dir, c.WorkDir)
}

// subtestArgs returns what --run and --skip ask of each run below the top
// level.
func (t *Tests) subtestArgs() (sub, skip string) {
	_, sub = testrun.SplitPattern(t.Run)
	if _, rest := testrun.SplitPattern(t.Skip); rest != "" {
		skip = t.Skip
	}
	return sub, skip
}
