package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/pipeline"
	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/plans"
)

// Exit statuses.
const (
	exitOK    = 0 // nothing found
	exitBugs  = 1 // bugs found
	exitError = 2 // usage or tool error
)

// errBugs is returned by a command that ran fine and found bugs.
var errBugs = errors.New("bugs found")

// usageError marks errors caused by how wafl was invoked.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// Main runs wafl with os.Args and the process's standard streams.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if path := os.Getenv("WAFL_CPUPROFILE"); path != "" {
		// A CPU profile of wafl's own process (not of the test binaries it
		// runs), for finding where prepare and detect spend their time.
		stopProfile, err := startCPUProfile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "wafl: WAFL_CPUPROFILE: %v\n", err)
			return exitError
		}
		defer stopProfile()
	}
	if path := os.Getenv("WAFL_MEMPROFILE"); path != "" {
		// The allocations of wafl's own process over its whole run (the
		// "allocs" profile), written when the command ends.
		runtime.MemProfileRate = 64 << 10
		defer writeAllocProfile(path)
	}
	return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// writeAllocProfile writes the allocation profile of this process to path.
func writeAllocProfile(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "wafl: WAFL_MEMPROFILE: %v\n", err)
	}
}

// startCPUProfile writes a CPU profile of this process to path until the
// returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "wafl: WAFL_CPUPROFILE: %v\n", err)
		}
	}, nil
}

// run is Main with injectable arguments and streams, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	args, err := translateGoTestFlags(args)
	if err == nil {
		root.SetArgs(args)
		err = root.ExecuteContext(ctx)
	} else {
		err = usageError{err}
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errBugs):
		return exitBugs
	default:
		fmt.Fprintf(stderr, "wafl: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, "Run 'wafl --help' for usage.")
		}
		return exitError
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	// The global flags and the streams; every command copies them into its
	// own options once the flags are parsed.
	common := &pipeline.Common{Stdout: stdout, Stderr: stderr, Self: selfName(), Version: Version()}
	root := &cobra.Command{
		Use:   "wafl",
		Short: "Find MEMORDER concurrency bugs in Go tests by active delay injection",
		Long: `wafl finds MEMORDER bugs — a value used by one goroutine before another
goroutine initialized it, or after another goroutine disposed of it — by running
a module's existing tests. 'wafl prepare' runs each test once without delays and
plans where and how long to delay; 'wafl detect' runs the tests with those delays
and reports the panics they cause.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       Version() + " " + runtime.Version(),
	}
	root.SetVersionTemplate("wafl {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&common.WorkDir, "dir", "", "work directory for builds, traces, plans and reports (default <module root>/.wafl)")
	pf.StringVarP(&common.Dir, "chdir", "C", "", "run as if wafl was started in this directory")
	pf.BoolVarP(&common.Verbose, "verbose", "v", false, "print every step")

	root.AddCommand(
		newPrepare(common),
		newDetect(common),
		newInstrument(common),
		newAnalyze(common),
		newReport(common),
		newReproduce(common),
		newMerge(common),
		newVet(common),
		newVersion(stdout),
	)
	return root
}

// checkTests refuses test options that cannot work, rather than letting
// them fall back to a default unseen.
func checkTests(t *pipeline.Tests) error {
	if t.Timeout <= 0 {
		return usageError{fmt.Errorf("--timeout %v: must be positive (wafl needs a limit to stop a hung test run)", t.Timeout)}
	}
	if t.Parallel < 1 {
		return usageError{fmt.Errorf("--parallel %d: must be at least 1", t.Parallel)}
	}
	if t.Procs < 1 {
		return usageError{fmt.Errorf("--procs %d: must be at least 1", t.Procs)}
	}
	for _, f := range []struct{ name, pattern string }{{"--run", t.Run}, {"--skip", t.Skip}} {
		// As the testing package does: one regular expression per level
		// of subtests, split at slashes outside brackets and parentheses.
		for rest := f.pattern; rest != ""; {
			var elem string
			elem, rest = testrun.SplitPattern(rest)
			if _, err := regexp.Compile(elem); err != nil {
				return usageError{fmt.Errorf("%s %q: %w", f.name, f.pattern, err)}
			}
		}
	}
	return nil
}

// testFlags registers the go test knobs that pass through to test runs.
func testFlags(cmd *cobra.Command, t *pipeline.Tests) {
	f := cmd.Flags()
	f.StringVar(&t.Run, "run", "", "run only tests matching this regular expression (as go test -run)")
	f.StringVar(&t.Skip, "skip", "", "skip tests matching this regular expression (as go test -skip)")
	f.DurationVar(&t.Timeout, "timeout", pipeline.DefaultTimeout, "kill a test run after this long and report it")
	f.IntVarP(&t.Parallel, "parallel", "p", runtime.NumCPU(), "packages whose tests run at once (a package's tests run one after another, as go test runs them)")
	f.IntVar(&t.Procs, "procs", pipeline.DefaultProcs(), "most test processes at once: beyond --parallel, more of a package's tests start while a CPU is idle, and a run that fails beside another runs again alone (--procs 1: a package's tests one after another, as go test)")
	f.BoolVar(&t.HostNetwork, "host-network", false, "keep every test process on the host's network (default: on Linux, a process that starts beside another of its package gets a network namespace of its own with only loopback, so fixed ports do not collide)")
	f.Var(shardValue{&t.Shard}, "shard", "run only shard I of N of the tests (deterministic split; combine with 'wafl merge')")
	f.BoolVar(&t.RetryFailing, "retry-failing", false, "run tests that failed or hung without delays on this build again (default: remembered and skipped)")
	f.BoolVar(&t.Short, "short", false, "tell long-running tests to shorten their run time (as go test -short)")
	f.StringVar(&t.CPU, "cpu", "", "GOMAXPROCS values to run each test with, comma-separated (as go test -cpu)")
}

func tagsFlag(cmd *cobra.Command, p *pipeline.Packages) {
	cmd.Flags().StringSliceVar(&p.Tags, "tags", nil, "build tags (as go test -tags)")
	cmd.Flags().StringSliceVar(&p.Instrument, "instrument", nil,
		"also instrument the dependency packages (outside the main module) the tests link whose import paths match these patterns, e.g. example.com/lib/...")
}

// analysisFlags registers the analysis parameters, with the plans defaults.
func analysisFlags(cmd *cobra.Command, o *plans.Overrides) {
	f := cmd.Flags()
	f.DurationVar(&o.NearMiss, "near-miss", time.Duration(plans.DefaultNearMissNs), "near-miss window δ")
	f.Float64Var(&o.Alpha, "alpha", plans.DefaultAlpha, "delay = alpha × largest observed gap")
	f.DurationVar(&o.MinDelay, "min-delay", time.Duration(plans.DefaultMinDelayNs), "shortest delay")
	f.DurationVar(&o.MaxDelay, "max-delay", time.Duration(plans.DefaultMaxDelayNs), "longest delay")
	f.BoolVar(&o.NoLoadScale, "no-load-scale", false,
		fmt.Sprintf("do not scale --near-miss and --max-delay by the machine's load during the preparation run (at most %g×)", plans.MaxLoadFactor))
}

// detectionFlags registers the detection-run parameters; unset, they keep
// the plan's (whose defaults the help shows).
func detectionFlags(cmd *cobra.Command, o *plans.Overrides) {
	f := cmd.Flags()
	f.Float64Var(&o.Decay, "decay", 0, fmt.Sprintf("probability decay λ per delay that exposes nothing (default: the plan's, %v)", plans.DefaultDecay))
	f.DurationVar(&o.MaxDelayPerGoroutine, "max-delay-per-goroutine", 0,
		fmt.Sprintf("cap on the total delay of one goroutine in a run (default: the plan's, %v)", time.Duration(plans.DefaultMaxDelayPerGoroutineNs)))
	f.DurationVar(&o.MaxDelayPerRun, "max-delay-per-run", 0,
		fmt.Sprintf("cap on the total delay of one run (default: the plan's, %v)", time.Duration(plans.DefaultMaxDelayPerRunNs)))
}

func reportFlags(cmd *cobra.Command, r *pipeline.Reports, jsonUsage string) {
	cmd.Flags().BoolVar(&r.JSON, "json", false, jsonUsage)
	cmd.Flags().StringVar(&r.SARIF, "sarif", "", "write a SARIF 2.1.0 report to this file")
}

func packagesArgs(args []string) ([]string, error) {
	if len(args) == 0 {
		return []string{"./..."}, nil
	}
	for _, a := range args {
		if strings.HasSuffix(a, ".go") {
			// go test makes a package of the files it is given; wafl
			// instruments packages as the go command lists them.
			pkg := filepath.ToSlash(filepath.Dir(filepath.Clean(a)))
			if pkg != "." && !filepath.IsAbs(pkg) && !strings.HasPrefix(pkg, "../") {
				pkg = "./" + pkg
			}
			return nil, usageError{fmt.Errorf("%s: wafl takes packages, not .go files: name the package (%s)", a, pkg)}
		}
	}
	return args, nil
}

func newPrepare(common *pipeline.Common) *cobra.Command {
	o := new(pipeline.PrepareOptions)
	var ablate []string
	cmd := &cobra.Command{
		Use:   "prepare [packages]",
		Short: "Instrument packages, run each test once delay-free and plan delays",
		Long: `prepare instruments the packages (default ./...) and their tests, builds each
package's test binary once, runs every test once without delays while recording
init/use/dispose events (the tests of a package in one process, split per test
afterwards; --per-test runs each alone), and analyzes each trace into a delay plan. Everything
goes under the work directory (.wafl at the module root); the source tree is
not modified.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Common = *common
			var err error
			if o.Patterns, err = packagesArgs(args); err != nil {
				return err
			}
			if err := checkTests(&o.Tests); err != nil {
				return err
			}
			a, err := ablationFlag(ablate)
			if err != nil {
				return err
			}
			o.Params.NoForkOrder = a.Has(abi.AblateParentChild)
			o.Basic = a.Has(abi.AblateBasic) // no preparation run: an empty plan marked basic
			sum, err := pipeline.Prepare(cmd.Context(), *o)
			if err != nil {
				return err
			}
			if err := sum.Err(); err != nil {
				return err
			}
			if len(sum.Bugs) > 0 { // a preparation run crashed with a MEMORDER panic
				return errBugs
			}
			return nil
		},
	}
	testFlags(cmd, &o.Tests)
	tagsFlag(cmd, &o.Packages)
	analysisFlags(cmd, &o.Params)
	ablateFlag(cmd, &ablate)
	cmd.Flags().BoolVar(&o.PerTest, "per-test", false, "run each test in a process of its own (default: the tests of a package share one, and those that crash, hang, fail or exit run again alone)")
	return cmd
}

func newDetect(common *pipeline.Common) *cobra.Command {
	o := new(pipeline.DetectOptions)
	var ablate []string
	cmd := &cobra.Command{
		Use:   "detect [packages]",
		Short: "Run tests with planned delays and report the MEMORDER bugs they expose",
		Long: `detect runs every test that has delay candidates (preparing it first if it has
no plan yet) with delays injected as planned, until a bug shows or --runs runs are
used, saving the plan after each run. A MEMORDER panic at a site of the plan is
reported as a bug however it came about (during a delay, during wafl's delay
decision, on the natural schedule), and so is one in a preparation run. Exit
status: 0 no bug, 1 bugs found (in this invocation or still live from an earlier
one), 2 error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Common = *common
			var err error
			if o.Patterns, err = packagesArgs(args); err != nil {
				return err
			}
			if err := checkTests(&o.Tests); err != nil {
				return err
			}
			o.SeedSet = cmd.Flags().Changed("seed")
			a, err := ablationFlag(ablate)
			if err != nil {
				return err
			}
			o.Ablate = a
			o.Params.NoForkOrder = a.Has(abi.AblateParentChild) // for tests prepared on the way; in basic mode, online too
			o.Basic = a.Has(abi.AblateBasic)
			if o.Runs < 1 {
				return usageError{errors.New("--runs must be at least 1")}
			}
			sum, err := pipeline.Detect(cmd.Context(), *o)
			if err != nil {
				return err
			}
			if err := sum.Err(); err != nil {
				return err
			}
			if len(sum.Bugs) > 0 {
				return errBugs
			}
			return nil
		},
	}
	testFlags(cmd, &o.Tests)
	tagsFlag(cmd, &o.Packages)
	analysisFlags(cmd, &o.Params)
	detectionFlags(cmd, &o.Params)
	f := cmd.Flags()
	f.IntVar(&o.Runs, "runs", pipeline.DefaultRuns, "detection runs per test")
	f.IntVar(&o.TestsPerPair, "tests-per-pair", pipeline.DefaultTestsPerPair, "of a package's tests that share a candidate pair, delay it in at most this many per call (0: in every one)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for every random decision (default: random, recorded in reports)")
	ablateFlag(cmd, &ablate)
	reportFlags(cmd, &o.Reports, "print the report JSON to stdout")
	return cmd
}

func newInstrument(common *pipeline.Common) *cobra.Command {
	o := new(pipeline.InstrumentOptions)
	cmd := &cobra.Command{
		Use:    "instrument [packages]",
		Hidden: true, // a step of prepare, for debugging the instrumentation
		Short:  "Instrument and build test binaries only; print where they went",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Common = *common
			var err error
			if o.Patterns, err = packagesArgs(args); err != nil {
				return err
			}
			sum, err := pipeline.Instrument(cmd.Context(), *o)
			if err != nil {
				return err
			}
			return sum.Err()
		},
	}
	tagsFlag(cmd, &o.Packages)
	return cmd
}

func newAnalyze(common *pipeline.Common) *cobra.Command {
	o := new(pipeline.AnalyzeOptions)
	var out string
	cmd := &cobra.Command{
		Use:    "analyze TRACE...",
		Hidden: true, // a step of prepare, for the harness and debugging the analysis
		Short:  "Analyze preparation-run traces (Arrow IPC) into plans",
		Long: `analyze reads preparation-run traces and writes one plan per trace, next to it
(TRACE with .plan.json) or to -o when a single trace is given. prepare does this
for every test; this command reruns the analysis, for example with other
parameters.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Common = *common
			if out != "" && len(args) > 1 {
				return usageError{errors.New("-o needs exactly one trace")}
			}
			return pipeline.AnalyzeFiles(cmd.Context(), *o, args, out)
		},
	}
	analysisFlags(cmd, &o.Params)
	cmd.Flags().StringVarP(&out, "output", "o", "", "plan file to write")
	return cmd
}

func newReport(common *pipeline.Common) *cobra.Command {
	o := new(pipeline.ReportOptions)
	cmd := &cobra.Command{
		Use:   "report [REPORT.json...]",
		Short: "Print bug reports (default: all reports in the work directory)",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Common = *common
			n, err := pipeline.PrintReports(*o, args)
			if err != nil {
				return err
			}
			if n > 0 {
				return errBugs
			}
			return nil
		},
	}
	reportFlags(cmd, &o.Reports, "print the report JSON")
	cmd.Flags().StringVar(&o.HTML, "html", "", "also write the bugs as one self-contained HTML page with a timeline per bug to this file")
	return cmd
}

func newVersion(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print wafl's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(stdout, "wafl %s %s\n", Version(), runtime.Version())
			return nil
		},
	}
}

// Version is wafl's module version, or "devel" in a build from a checkout.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// ablateFlag registers --ablate, the research switch that turns parts of
// the algorithm off to measure them (abi.Ablations). It is hidden from
// --help: the evaluation harness uses it, a user has no need to.
func ablateFlag(cmd *cobra.Command, parts *[]string) {
	var doc []string
	for _, s := range abi.Ablations {
		doc = append(doc, s.Name+" ("+s.Doc+")")
	}
	cmd.Flags().StringSliceVar(parts, "ablate", nil, "turn parts of the algorithm off to measure them: "+strings.Join(doc, ", "))
	_ = cmd.Flags().MarkHidden("ablate")
}

// ablationFlag parses --ablate's parts. Parts that change only the other
// phase are accepted (the harness passes one list to both).
func ablationFlag(parts []string) (abi.Ablation, error) {
	a, err := abi.ParseAblation(strings.Join(parts, ","))
	if err != nil {
		return 0, usageError{fmt.Errorf("--ablate: %w", err)}
	}
	return a, nil
}
