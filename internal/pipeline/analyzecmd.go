package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/memorder/wafl/analyze"
	"github.com/memorder/wafl/plans"
)

// AnalyzeFiles analyzes preparation traces into plans: each TRACE.arrows
// into TRACE.plan.json, or the single trace into out.
func AnalyzeFiles(ctx context.Context, o AnalyzeOptions, traces []string, out string) error {
	o.streams()
	failed := 0
	for _, tr := range traces {
		dst := out
		if dst == "" {
			dst = strings.TrimSuffix(tr, filepath.Ext(tr)) + ".plan.json"
		}
		p := o.Params.NewParams()
		plan, stats, err := analyze.File(ctx, tr, analyze.Options{Params: &p, Tool: "wafl"})
		if err != nil {
			fmt.Fprintf(o.Stderr, "wafl: %s: %v\n", tr, err)
			failed++
			continue
		}
		for _, w := range stats.Warnings {
			fmt.Fprintf(o.Stderr, "wafl: %s: warning: %s\n", tr, w)
		}
		if err := plans.Save(dst, plan); err != nil {
			return err
		}
		fmt.Fprintf(o.Stdout, "%s: %d events, %d objects, %d candidate pairs at %d locations (pruned: %d by forks, %d outside δ, %d same goroutine) in %s\n\t-> %s\n",
			tr, stats.Events, stats.Objects, stats.Candidates, stats.Locations,
			stats.PrunedFork, stats.PrunedWindow, stats.PrunedSameG, stats.Duration.Round(1e6), dst)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d traces could not be analyzed", failed, len(traces))
	}
	return nil
}
