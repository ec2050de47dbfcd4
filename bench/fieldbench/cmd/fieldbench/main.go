// Command fieldbench runs the field benchmark: for each manifest in
// bench/scripts/field/ it fetches the buggy module version through the Go module
// proxy, applies the test patch, and measures plain runs, the race detector
// and wafl's exposure; it stores the numbers in bench/scripts/field/results.json and
// rewrites the field section of docs/evaluation.md.
//
//	cd bench && go run ./fieldbench/cmd/fieldbench [flags] [bug...]
//
// Run from the bench directory (`make field`, `make field BUG=name`); the
// default paths are relative to it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/memorder/wafl/bench/fieldbench"
)

func main() {
	var o fieldbench.Options
	wafl := flag.String("wafl", "../bin/wafl", "wafl binary (built from this repository)")
	flag.IntVar(&o.Tries, "tries", 5, "independent wafl tries per bug")
	flag.IntVar(&o.Runs, "runs", 5, "detection runs per try at most")
	flag.IntVar(&o.PlainRuns, "plain", 30, "plain runs per bug at most")
	flag.DurationVar(&o.PlainBudget, "plain-budget", 90*time.Second, "time budget of the plain runs per bug")
	flag.IntVar(&o.RaceRuns, "race", 3, "runs of the -race test binary")
	manifests := flag.String("manifests", "scripts/field", "directory of the manifests")
	results := flag.String("results", "scripts/field/results.json", "stored results (updated per bug)")
	doc := flag.String("doc", "../docs/evaluation.md", "document whose field section is rewritten (empty: none)")
	render := flag.Bool("render", false, "only rewrite the document from the stored results (no runs)")
	work := flag.String("work", filepath.Join(os.TempDir(), "wafl-field"), "work directory (one subdirectory per bug, kept for diagnosis)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ms, err := fieldbench.LoadManifests(*manifests, flag.Args()...)
	if err != nil {
		fail(err)
	}
	if o.Wafl, err = filepath.Abs(*wafl); err != nil {
		fail(err)
	}
	if _, err := os.Stat(o.Wafl); err != nil {
		fail(fmt.Errorf("wafl binary: %v (run `make build` first)", err))
	}
	o.WaflCommit = commit()
	o.Log = os.Stderr
	res, err := fieldbench.LoadResults(*results)
	if err != nil {
		fail(err)
	}
	all, err := fieldbench.LoadManifests(*manifests)
	if err != nil {
		fail(err)
	}
	writeDoc := func() {
		if *doc == "" {
			return
		}
		notes, _ := os.ReadFile(filepath.Join(*manifests, "NOTES.md"))
		if err := fieldbench.UpdateDoc(*doc, fieldbench.Markdown(all, res, "make field", string(notes))); err != nil {
			fail(err)
		}
	}
	if *render {
		writeDoc()
		return
	}
	start := time.Now()
	for _, m := range ms {
		o.Work = filepath.Join(*work, m.Name)
		os.RemoveAll(o.Work)
		t0 := time.Now()
		r := fieldbench.Bench(ctx, m, o)
		if ctx.Err() != nil {
			fail(ctx.Err())
		}
		// Re-read the stored results before adding this bug's, so that two
		// benches of different bugs run side by side keep each other's numbers.
		if fresh, err := fieldbench.LoadResults(*results); err == nil {
			res = fresh
		}
		res[m.Name] = r
		s := r.Summarize()
		fmt.Fprintf(os.Stderr, "== %s: exposed within 2 runs %d/%d, within %d runs %d/%d; race %d/%d; plain %d/%d; %s (%s)\n",
			m.Name, s.Within2, s.Tries, o.Runs, s.Exposed, s.Tries, r.RaceReports, r.RaceRuns, r.PlainFails, r.PlainRuns,
			time.Since(t0).Round(time.Second), orOK(r.Error))
		if err := res.Save(*results); err != nil {
			fail(err)
		}
		writeDoc()
	}
	fmt.Fprintf(os.Stderr, "field: %d bugs in %s; logs and work directories under %s\n", len(ms), time.Since(start).Round(time.Second), *work)
}

func orOK(s string) string {
	if s == "" {
		return "ok"
	}
	return "ERROR: " + s
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", ":(top)", ":(top,exclude)docs", ":(top,exclude)bench").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fieldbench:", err)
	os.Exit(2)
}
