// Command hunt runs wafl on the pinned modules of
// bench/scripts/hunt/modules.tsv next to plain `go test` and `go test
// -race`, stores one result per module in bench/scripts/hunt/results/ and
// rewrites docs/hunt.md.
//
//	cd bench && go run ./hunt/cmd/hunt [-wafl ../bin/wafl] [-force] [module...]
//
// Run from the bench directory (`make hunt`, `make hunt MOD="xsync zap"`);
// the default paths are relative to it. Modules run one after the other (the
// machine is shared); a module with a stored result for the same version,
// packages and skip is not run again unless -force is given, so an
// interrupted hunt resumes where it stopped. Each step is bounded by
// -step-timeout. Ctrl-C stops the module in progress without storing it
// and rewrites the document from what is stored.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memorder/wafl/bench/fieldbench"
	"github.com/memorder/wafl/bench/fieldruns"
	"github.com/memorder/wafl/bench/hunt"
)

func main() {
	dir := flag.String("dir", "scripts/hunt", "directory of modules.tsv")
	results := flag.String("results", "", "results directory (default DIR/results)")
	doc := flag.String("doc", "../docs/hunt.md", "document to rewrite (empty: none)")
	triage := flag.String("triage", "", "hand-made verdicts of the triage (default DIR/triage.tsv)")
	notes := flag.String("notes", "", "hand-written notes that end the document (default DIR/NOTES.md)")
	link := flag.String("link", "../bench/scripts/hunt/results", "the results directory as seen from the document")
	work := flag.String("work", filepath.Join(os.TempDir(), "wafl-hunt"), "work directory (kept for diagnosis: module copies, wafl work dirs, outputs)")
	wafl := flag.String("wafl", "../bin/wafl", "wafl binary, built from the git work tree it is in (whose last commit of wafl's Go code the results record)")
	commit := flag.String("commit", "", "the wafl commit the results record, for a binary outside a git work tree (default: the work tree's HEAD)")
	force := flag.Bool("force", false, "run modules that already have a stored result again")
	render := flag.Bool("render", false, "only rewrite the document from the stored results")
	reclassify := flag.Bool("reclassify", false, "derive the reports, broken tests and wafl errors of the stored results again (from their wafl work directories under -work), fill in the critical path of results stored without it (when the work directory is theirs), then rewrite the document")
	var o hunt.Options
	flag.DurationVar(&o.StepTimeout, "step-timeout", 15*time.Minute, "bound of each step (go test, go test -race, wafl prepare, wafl detect) of one module")
	flag.DurationVar(&o.TestTimeout, "test-timeout", 3*time.Minute, "wafl --timeout: bound of one test run (0: wafl's default)")
	flag.IntVar(&o.Runs, "runs", 3, "wafl detect --runs")
	flag.Uint64Var(&o.Seed, "seed", 1, "wafl detect --seed")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: hunt [flags] [module name or path...]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *results == "" {
		*results = filepath.Join(*dir, "results")
	}
	if *triage == "" {
		*triage = filepath.Join(*dir, "triage.tsv")
	}
	if *notes == "" {
		*notes = filepath.Join(*dir, "NOTES.md")
	}
	o.Results, o.Work, o.Log = *results, *work, os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	all, err := fieldruns.LoadModules(filepath.Join(*dir, "modules.tsv"))
	if err != nil {
		fail(err)
	}
	mods, err := fieldruns.LoadModules(filepath.Join(*dir, "modules.tsv"), flag.Args()...)
	if err != nil {
		fail(err)
	}
	inv := hunt.Invocation{Machine: fieldbench.Machine(), LoadStart: loadAvgs(), Start: time.Now(),
		Command: "hunt " + strings.Join(os.Args[1:], " ")}
	writeDoc := func() {
		if *doc == "" {
			return
		}
		stored, err := hunt.LoadResults(*results, all)
		if err != nil {
			fail(err)
		}
		tri, err := hunt.LoadTriage(*triage)
		if err != nil {
			fail(err)
		}
		text, err := os.ReadFile(*notes)
		if err != nil && !os.IsNotExist(err) {
			fail(err)
		}
		inv.LoadEnd, inv.End = loadAvgs(), time.Now()
		if err := os.WriteFile(*doc, []byte(hunt.Markdown(all, stored, inv, *link, tri, string(text))), 0o644); err != nil {
			fail(err)
		}
	}
	if *reclassify {
		stored, err := hunt.LoadResults(*results, mods)
		if err != nil {
			fail(err)
		}
		for _, m := range mods {
			r := stored[m.Name]
			if r == nil {
				continue
			}
			work := hunt.WorkDir(o.Work, m.Name)
			if _, err := os.Stat(work); err != nil {
				fmt.Fprintf(os.Stderr, "hunt: %s: %v (kept as stored)\n", m.Name, err)
				continue
			}
			r.Classify(*results, work)
			r.RefreshHung()
			if w := r.Wafl; w != nil && (w.LongestPrepNs == 0 && w.LongestChainNs == 0 || w.RunsWithCPU < w.Runs) && !r.RefreshCriticalPath(work) {
				fmt.Fprintf(os.Stderr, "hunt: %s: the work directory is not the stored result's: no critical path or runs' CPU\n", m.Name)
			}
			if err := r.Save(*results); err != nil {
				fail(err)
			}
		}
		*render = true
	}
	if *render {
		if l, err := fieldruns.NewLabel(ctx, "wafl", *wafl, ""); err == nil {
			inv.Commit = hunt.SourceCommit(filepath.Dir(l.Binary))
		}
		writeDoc()
		return
	}
	l, err := fieldruns.NewLabel(ctx, "wafl", *wafl, *commit)
	if err != nil {
		fail(fmt.Errorf("%v (build it: cd .. && go build -o bin/wafl ./cmd/wafl)", err))
	}
	o.Wafl, o.WaflSource = l, hunt.SourceCommit(filepath.Dir(l.Binary))
	if *commit != "" {
		o.WaflSource = *commit
	}
	inv.Commit = o.WaflSource

	start := time.Now()
	ran := 0
	for _, m := range mods {
		old, err := hunt.LoadResult(hunt.ResultPath(*results, m.Name))
		if err != nil {
			fail(err)
		}
		if !*force && old.Matches(m) {
			fmt.Fprintf(os.Stderr, "== %s: stored (%s, wafl %s); -force runs it again\n", m.Name, old.Date.Format("2006-01-02"), old.WaflCommit)
			continue
		}
		t0 := time.Now()
		r := hunt.RunModule(ctx, m, o)
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "== %s: interrupted, not stored\n", m.Name)
			break
		}
		if err := r.Save(*results); err != nil {
			fail(err)
		}
		ran++
		fmt.Fprintf(os.Stderr, "== %s done in %s: %s; %d reports, %d broken by delays, %d wafl errors\n",
			m.Name, time.Since(t0).Round(time.Second), r.Status, len(r.Reports), len(r.Broken), len(r.WaflErrors))
		writeDoc()
	}
	writeDoc()
	// The directories set aside go now, after the last timed step.
	if err := hunt.EmptyTrash(*work); err != nil {
		fmt.Fprintf(os.Stderr, "hunt: %v\n", err)
	}
	fmt.Fprintf(os.Stderr, "hunt: %d modules run in %s; results in %s, outputs under %s\n", ran, time.Since(start).Round(time.Second), *results, *work)
	if ctx.Err() != nil {
		os.Exit(2)
	}
}

// loadAvgs are the 1, 5 and 15 minute load averages.
func loadAvgs() [3]float64 {
	var l [3]float64
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	for i, f := range strings.Fields(string(data)) {
		if i < 3 {
			l[i], _ = strconv.ParseFloat(f, 64)
		}
	}
	return l
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hunt:", err)
	os.Exit(2)
}
