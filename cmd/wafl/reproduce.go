package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/memorder/wafl/internal/pipeline"
)

// selfName is how reproduce lines name this wafl: the path it was started
// by (relative to the working directory when under it), or "wafl" when it
// was found on PATH.
func selfName() string {
	arg0 := os.Args[0]
	if filepath.Base(arg0) == arg0 {
		return "wafl"
	}
	abs, err := filepath.Abs(arg0)
	if err != nil {
		return arg0
	}
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, abs); err == nil && len(r) < len(abs) {
			return r
		}
	}
	return abs
}

func newReproduce(common *pipeline.Common) *cobra.Command {
	o := new(pipeline.ReproduceOptions)
	cmd := &cobra.Command{
		Use:   "reproduce REPORT.json",
		Short: "Re-run the run that exposed each bug of a report and print how often it shows",
		Long: `reproduce re-runs, for each bug of a report file (.wafl/reports/<pkg>/<Test>.json),
exactly the run that exposed it: the same test, the bug's own copy of the plan and
the same seed, -n times, and prints the reproduction rate. It builds the package
first and says whether the test binary is still the one that found the bug; when
the code changed it maps the plan's sites onto the new build, so that after a fix
the same command checks the fix (0/N). Exit status: 0 no bug reproduced, 1 some
bug reproduced, 2 error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Common = *common
			res, err := pipeline.Reproduce(cmd.Context(), *o, args[0])
			if err != nil {
				return err
			}
			if res.Reproduced() {
				return errBugs
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&o.Runs, "count", "n", pipeline.DefaultReproduceRuns, "runs per bug")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", pipeline.DefaultTimeout, "kill a run after this long")
	cmd.Flags().StringSliceVar(&o.Instrument, "instrument", nil, "the --instrument patterns the report's detection run used")
	return cmd
}
