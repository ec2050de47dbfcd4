package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/memorder/wafl/internal/pipeline"
	"github.com/memorder/wafl/internal/vet"
	"github.com/memorder/wafl/internal/vet/marks"
)

func newVet(common *pipeline.Common) *cobra.Command {
	o := vet.Options{}
	var noMarks bool
	cmd := &cobra.Command{
		Use:   "vet [packages]",
		Short: "Report MEMORDER hints by static analysis, without running tests",
		Long: `vet analyzes the packages (default ./...) without running anything and
prints a hint for each place where one goroutine may use a value before
another initialized it or after another disposed of it, where a close follows
a check outside one critical section, or where WaitGroup.Add follows the go
statement whose goroutine calls Done. Each line is file:line:col: message,
followed by the related positions, indented.

When a wafl work directory exists (.wafl at the module root, or --dir), each
hint is marked: confirmed (a detection run crashed there), exercised (a test
ran both sides), or untested (no test reached one of them).

Exit status: 0 no hints, 1 hints, 2 errors. The same analyzer runs as
go vet -vettool=$(which wafl-vet).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			patterns, err := packagesArgs(args)
			if err != nil {
				return err
			}
			o.Patterns = patterns
			o.Dir = common.Dir
			if !noMarks {
				if dir := marks.WorkDir(common.WorkDir, common.Dir); dir != "" {
					o.Mark = func(hints []vet.Found) {
						ix, err := marks.Load(dir)
						if err != nil {
							fmt.Fprintf(common.Stderr, "wafl: vet: %s: %v (hints not marked)\n", dir, err)
							return
						}
						ix.Mark(hints)
						cwd := common.Dir
						if cwd == "" {
							cwd, _ = os.Getwd()
						}
						for i := range hints {
							if r, err := filepath.Rel(cwd, hints[i].Report); err == nil && hints[i].Report != "" {
								hints[i].Report = r
							}
						}
					}
				}
			}
			o.Version = common.Version
			o.Stdout, o.Stderr = common.Stdout, common.Stderr
			res, err := vet.Run(o)
			if err != nil {
				return err
			}
			for _, e := range res.Errors {
				fmt.Fprintf(common.Stderr, "wafl: vet: %s\n", e)
			}
			switch {
			case len(res.Failed) > 0 || len(res.Errors) > 0:
				return fmt.Errorf("vet: %d package(s) could not be analyzed", max(len(res.Failed), 1))
			case len(res.Hints) > 0:
				return errBugs
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Tags, "tags", nil, "build tags")
	f.BoolVar(&o.JSON, "json", false, "print the hints as JSON")
	f.StringVar(&o.SARIF, "sarif", "", "also write the hints as a SARIF 2.1.0 log to this file")
	f.BoolVar(&noMarks, "no-marks", false, "do not mark hints from the work directory")
	return cmd
}
