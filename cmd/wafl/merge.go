package main

import (
	"github.com/spf13/cobra"

	"github.com/memorder/wafl/internal/pipeline"
)

// shardValue is the --shard flag.
type shardValue struct{ s *pipeline.Shard }

func (v shardValue) String() string {
	if v.s == nil || v.s.N == 0 {
		return ""
	}
	return v.s.String()
}

func (v shardValue) Set(s string) error {
	sh, err := pipeline.ParseShard(s)
	if err != nil {
		return err
	}
	*v.s = sh
	return nil
}

func (shardValue) Type() string { return "I/N" }

func newMerge(common *pipeline.Common) *cobra.Command {
	o := new(pipeline.MergeOptions)
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Merge the work directories of shards into this one and print all bugs",
		Long: `merge combines the work directories (.wafl) of runs with --shard I/N, made on
the machines of a CI matrix, into this module's work directory (or --dir): plans
(a test's plans for the same binary are merged), remembered failures, bug reports
with their reproduction files. It prints every bug as one report: --json for one
JSON document, --sarif FILE for one SARIF file. Exit status: 0 no bug, 1 bugs,
2 error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Common = *common
			n, err := pipeline.Merge(*o, args)
			if err != nil {
				return err
			}
			if n > 0 {
				return errBugs
			}
			return nil
		},
	}
	reportFlags(cmd, &o.Reports, "print the merged report JSON to stdout")
	return cmd
}
