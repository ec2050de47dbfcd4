package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/memorder/wafl/internal/pipeline"
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

// Main runs wafl with os.Args and the process's standard streams.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// run is Main with injectable arguments and streams, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
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
	var common pipeline.Options
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
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&common.WorkDir, "dir", "", "work directory for builds, traces, plans and reports (default <module root>/.wafl)")
	pf.StringVarP(&common.Dir, "chdir", "C", "", "run as if wafl was started in this directory")
	pf.BoolVarP(&common.Verbose, "verbose", "v", false, "print every step")

	root.AddCommand(
		newPrepare(&common, stdout, stderr),
		newDetect(&common, stdout, stderr),
		newInstrument(&common, stdout, stderr),
		newAnalyze(&common, stdout, stderr),
		newReport(&common, stdout, stderr),
		newVersion(stdout),
	)
	return root
}

// testFlags registers the go test knobs that pass through to test runs.
func testFlags(cmd *cobra.Command, o *pipeline.Options) {
	f := cmd.Flags()
	f.StringVar(&o.Run, "run", "", "run only tests matching this regular expression (as go test -run)")
	f.StringVar(&o.Skip, "skip", "", "skip tests matching this regular expression (as go test -skip)")
	f.StringSliceVar(&o.Tags, "tags", nil, "build tags (as go test -tags)")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "kill a test run after this long and report it")
	f.IntVarP(&o.Parallel, "parallel", "p", runtime.NumCPU(), "test runs in parallel")
}

func analysisFlags(cmd *cobra.Command, o *pipeline.Options) {
	f := cmd.Flags()
	f.DurationVar(&o.NearMiss, "near-miss", 100*time.Millisecond, "near-miss window δ")
	f.Float64Var(&o.Alpha, "alpha", 1.25, "delay = alpha × largest observed gap")
	f.DurationVar(&o.MinDelay, "min-delay", time.Millisecond, "shortest delay")
	f.DurationVar(&o.MaxDelay, "max-delay", 100*time.Millisecond, "longest delay")
}

func packagesArgs(args []string) []string {
	if len(args) == 0 {
		return []string{"./..."}
	}
	return args
}

func newPrepare(common *pipeline.Options, stdout, stderr io.Writer) *cobra.Command {
	o := new(pipeline.Options)
	cmd := &cobra.Command{
		Use:   "prepare [packages]",
		Short: "Instrument packages, run each test once delay-free and plan delays",
		Long: `prepare instruments the packages (default ./...) and their tests, builds each
package's test binary once, runs every test once without delays while recording
init/use/dispose events, and analyzes each trace into a delay plan. Everything
goes under the work directory (.wafl at the module root); the source tree is
not modified.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Inherit(common)
			o.Patterns = packagesArgs(args)
			o.Stdout, o.Stderr = stdout, stderr
			sum, err := pipeline.Prepare(cmd.Context(), *o)
			if err != nil {
				return err
			}
			return sum.Err()
		},
	}
	testFlags(cmd, o)
	analysisFlags(cmd, o)
	return cmd
}

func newDetect(common *pipeline.Options, stdout, stderr io.Writer) *cobra.Command {
	o := new(pipeline.Options)
	cmd := &cobra.Command{
		Use:   "detect [packages]",
		Short: "Run tests with planned delays and report the MEMORDER bugs they expose",
		Long: `detect runs every test that has delay candidates (preparing it first if it has
no plan yet) with delays injected as planned, until a bug shows or --runs runs are
used, saving the plan after each run. Bugs are reported only when an injected delay
caused a real panic. Exit status: 0 no bug, 1 bugs found, 2 error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Inherit(common)
			o.Patterns = packagesArgs(args)
			o.Stdout, o.Stderr = stdout, stderr
			o.SeedSet = cmd.Flags().Changed("seed")
			for _, a := range o.Ablate {
				switch a {
				case "interference", "hb", "decay":
				default:
					return usageError{fmt.Errorf("--ablate: unknown part %q (want interference, hb or decay)", a)}
				}
			}
			if o.Runs < 1 {
				return usageError{fmt.Errorf("--runs must be at least 1")}
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
	testFlags(cmd, o)
	analysisFlags(cmd, o)
	f := cmd.Flags()
	f.IntVar(&o.Runs, "runs", 3, "detection runs per test")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for every random decision (default: random, recorded in reports)")
	f.Float64Var(&o.Decay, "decay", 0, "probability decay λ per delay that exposes nothing (default: the plan's, 0.1)")
	f.DurationVar(&o.CapGoroutine, "max-delay-per-goroutine", 0, "cap on the total delay of one goroutine in a run (default: the plan's, 1s)")
	f.DurationVar(&o.CapRun, "max-delay-per-run", 0, "cap on the total delay of one run (default: the plan's, 5s)")
	f.StringSliceVar(&o.Ablate, "ablate", nil, "turn parts of the algorithm off to measure them: interference, hb, decay")
	f.BoolVar(&o.JSON, "json", false, "print the report JSON to stdout")
	f.StringVar(&o.SARIF, "sarif", "", "write a SARIF 2.1.0 report to this file")
	return cmd
}

func newInstrument(common *pipeline.Options, stdout, stderr io.Writer) *cobra.Command {
	o := new(pipeline.Options)
	cmd := &cobra.Command{
		Use:   "instrument [packages]",
		Short: "Instrument and build test binaries only; print where they went",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Inherit(common)
			o.Patterns = packagesArgs(args)
			o.Stdout, o.Stderr = stdout, stderr
			sum, err := pipeline.Instrument(cmd.Context(), *o)
			if err != nil {
				return err
			}
			return sum.Err()
		},
	}
	cmd.Flags().StringSliceVar(&o.Tags, "tags", nil, "build tags (as go test -tags)")
	return cmd
}

func newAnalyze(common *pipeline.Options, stdout, stderr io.Writer) *cobra.Command {
	o := new(pipeline.Options)
	var out string
	cmd := &cobra.Command{
		Use:   "analyze TRACE...",
		Short: "Analyze preparation-run traces (Arrow IPC) into plans",
		Long: `analyze reads preparation-run traces and writes one plan per trace, next to it
(TRACE with .plan.json) or to -o when a single trace is given. prepare does this
for every test; this command reruns the analysis, for example with other
parameters.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Inherit(common)
			o.Stdout, o.Stderr = stdout, stderr
			if out != "" && len(args) > 1 {
				return usageError{fmt.Errorf("-o needs exactly one trace")}
			}
			return pipeline.AnalyzeFiles(cmd.Context(), *o, args, out)
		},
	}
	analysisFlags(cmd, o)
	cmd.Flags().StringVarP(&out, "output", "o", "", "plan file to write")
	return cmd
}

func newReport(common *pipeline.Options, stdout, stderr io.Writer) *cobra.Command {
	o := new(pipeline.Options)
	cmd := &cobra.Command{
		Use:   "report [REPORT.json...]",
		Short: "Print bug reports (default: all reports in the work directory)",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Inherit(common)
			o.Stdout, o.Stderr = stdout, stderr
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
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the report JSON")
	cmd.Flags().StringVar(&o.SARIF, "sarif", "", "write a SARIF 2.1.0 report to this file")
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
