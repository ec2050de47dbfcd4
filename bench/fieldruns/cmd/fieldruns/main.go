// Command fieldruns runs one or more labeled wafl binaries on the pinned real
// modules of bench/scripts/fieldruns/modules.tsv, stores the numbers in
// bench/scripts/fieldruns/results.json and rewrites docs/field-runs.md.
//
//	cd bench && go run ./fieldruns/cmd/fieldruns -bin before=/tmp/wafl-before@8843844 -bin after=../bin/wafl [module...]
//
// Run from the bench directory (`make field-runs`); the default paths are
// relative to it. Modules run one
// after the other (the machine is shared), each wafl command bounded by
// -timeout. A label given on the command line replaces that label's stored
// results, unless it is the same commit with the same flags (then the modules
// run replace only their own rows); labels not given keep theirs, so
// `make field-runs` (after only) leaves the stored "before" column alone.
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
	"github.com/memorder/wafl/bench/fieldruns"
)

type binFlags []string

func (b *binFlags) String() string     { return strings.Join(*b, ",") }
func (b *binFlags) Set(s string) error { *b = append(*b, s); return nil }

func main() {
	var bins binFlags
	flag.Var(&bins, "bin", "label=path[@commit] of a wafl binary (repeatable; order = column order)")
	dir := flag.String("dir", "scripts/fieldruns", "directory of modules.tsv, intro.md, notes.md and results.json")
	doc := flag.String("doc", "../docs/field-runs.md", "document to rewrite (empty: none)")
	results := flag.String("results", "", "stored results (default DIR/results.json)")
	work := flag.String("work", filepath.Join(os.TempDir(), "wafl-fieldruns"), "work directory (kept for diagnosis: module copies, wafl work dirs, outputs)")
	var o fieldruns.Options
	flag.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "bound of each wafl command on one module")
	flag.DurationVar(&o.TestTimeout, "test-timeout", 90*time.Second, "wafl --timeout: bound of one test run")
	flag.IntVar(&o.Runs, "runs", 0, "wafl detect --runs (0: wafl's default)")
	flag.Uint64Var(&o.Seed, "seed", 1, "wafl detect --seed")
	baseline := flag.String("baseline", "xsync,zap", "modules whose prepare is also measured against plain go test (empty: none)")
	reps := flag.Int("reps", 3, "samples of the baseline")
	baselineOnly := flag.Bool("baseline-only", false, "only measure the baseline")
	render := flag.Bool("render", false, "only rewrite the document from the stored results")
	recollect := flag.Bool("recollect", false, "re-read the stored results' work directories under -work, then rewrite the document")
	flag.Parse()
	if *results == "" {
		*results = filepath.Join(*dir, "results.json")
	}
	o.Log = os.Stderr

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
	store, err := fieldruns.LoadStore(*results)
	if err != nil {
		fail(err)
	}
	writeDoc := func() {
		if err := store.Save(*results); err != nil {
			fail(err)
		}
		if *doc == "" {
			return
		}
		intro, _ := os.ReadFile(filepath.Join(*dir, "intro.md"))
		notes, _ := os.ReadFile(filepath.Join(*dir, "notes.md"))
		if err := os.WriteFile(*doc, []byte(fieldruns.Markdown(all, store, string(intro), string(notes))), 0o644); err != nil {
			fail(err)
		}
	}
	if *render {
		writeDoc()
		return
	}
	if *recollect {
		// Re-read the kept work directories of the stored results (after
		// a change of what is collected), for the modules given or all.
		for _, m := range mods {
			for name, lr := range store.Labels {
				r := lr.Results[m.Name]
				dir := filepath.Join(*work, m.Name, "wafl-"+name)
				if r == nil {
					continue
				}
				if _, err := os.Stat(dir); err != nil {
					fmt.Fprintf(os.Stderr, "fieldruns: %s %s: %v (kept as stored)\n", name, m.Name, err)
					continue
				}
				st, bugs, err := fieldruns.CollectWork(dir)
				if err != nil {
					fail(err)
				}
				r.Stats, r.Bugs = st, bugs
			}
		}
		writeDoc()
		return
	}
	if len(bins) == 0 {
		fail(fmt.Errorf("no -bin label=path given"))
	}
	var labels []fieldruns.Label
	for _, b := range bins {
		l, err := fieldruns.ParseLabel(ctx, b)
		if err != nil {
			fail(err)
		}
		labels = append(labels, l)
	}
	cmdline := "fieldruns " + strings.Join(os.Args[1:], " ")
	machine, gover := fieldbench.Machine(), goVersion(ctx)
	runs := map[string]*fieldruns.LabelRun{}
	if !*baselineOnly {
		for _, l := range labels {
			flags := append(o.WaflFlags(), o.DetectFlags()...)
			// The same binary (commit) with the same flags adds to its
			// stored results (a subset rerun replaces only its modules); any
			// other binary replaces the label's column.
			if old := store.Labels[l.Name]; old != nil && l.Commit != "" && !strings.HasSuffix(l.Commit, "+dirty") &&
				old.Label.Commit == l.Commit && strings.Join(old.Flags, " ") == strings.Join(flags, " ") {
				old.Command += "; then " + cmdline
				runs[l.Name] = old
				continue
			}
			lr := &fieldruns.LabelRun{Label: l, Date: time.Now().UTC(), Machine: machine, Go: gover, Command: cmdline,
				Flags: flags, Results: map[string]*fieldruns.Result{}}
			runs[l.Name] = lr
			store.AddLabel(lr)
		}
	}
	inBaseline := map[string]bool{}
	for _, n := range strings.Split(*baseline, ",") {
		if n = strings.TrimSpace(n); n != "" {
			inBaseline[n] = true
		}
	}
	start := time.Now()
	for _, m := range mods {
		if !*baselineOnly || inBaseline[m.Name] {
			runModule(ctx, m, labels, runs, store, inBaseline[m.Name], *baselineOnly, *reps, *work, o, writeDoc)
		}
		if ctx.Err() != nil {
			fail(ctx.Err())
		}
		writeDoc()
	}
	fmt.Fprintf(os.Stderr, "fieldruns: %d modules in %s; outputs under %s\n", len(mods), time.Since(start).Round(time.Second), *work)
}

func runModule(ctx context.Context, m fieldruns.Module, labels []fieldruns.Label, runs map[string]*fieldruns.LabelRun,
	store *fieldruns.Store, baseline, baselineOnly bool, reps int, work string, o fieldruns.Options, save func()) {
	t0 := time.Now()
	fmt.Fprintf(os.Stderr, "== %s (%s)\n", m.Name, m.ModVersion())
	mdir := filepath.Join(work, m.Name)
	src := filepath.Join(mdir, "src")
	failAll := func(status string) {
		fmt.Fprintf(os.Stderr, "   %s\n", status)
		for _, l := range labels {
			if lr := runs[l.Name]; lr != nil {
				lr.Results[m.Name] = &fieldruns.Result{Module: m.Path, Version: m.Version, Status: status}
			}
		}
	}
	if err := fieldruns.Source(ctx, m, src); err != nil {
		failAll("fetch: " + err.Error())
		return
	}
	warm := fieldruns.Warm(ctx, m, src, o.Timeout)
	fmt.Fprintf(os.Stderr, "  plain build of the tests: %.1fs, exit %d\n", warm.Wall, warm.Exit)
	if warm.Exit != 0 {
		os.WriteFile(filepath.Join(mdir, "warm.out"), append(warm.Stdout, warm.Stderr...), 0o644)
		// Still run wafl: packages that build are worth it; the status says
		// which did not build without wafl either.
		fmt.Fprintf(os.Stderr, "  plain `go test -run ^$` failed (see %s/warm.out)\n", mdir)
	}
	if !baselineOnly {
		for _, l := range labels {
			r := fieldruns.RunModule(ctx, m, src, filepath.Join(mdir, "wafl-"+l.Name), l, o)
			if warm.Exit != 0 {
				r.Status += " (plain test build failed too)"
			}
			runs[l.Name].Results[m.Name] = r
			if ctx.Err() != nil {
				return
			}
		}
		save() // before the baseline, which takes long
	}
	if baseline {
		b := &fieldruns.Baseline{Module: m.Path, Version: m.Version, Date: time.Now().UTC(), Machine: fieldbench.Machine(),
			Command: "go test " + strings.Join(append(append([]string{"-count=1"}, m.GoTestFlags()...), m.Patterns...), " ") +
				" | wafl prepare " + strings.Join(append(append(o.WaflFlags(), m.TestFlags()...), m.Patterns...), " "),
			Prepare: map[string][]fieldruns.Timing{}, Commits: map[string]string{}}
		for i := 0; i < reps; i++ {
			b.Load = append(b.Load, fieldruns.LoadAvg())
			g := fieldruns.GoTest(ctx, m, src, o.Timeout)
			b.GoTest = append(b.GoTest, g.Timing)
			fmt.Fprintf(os.Stderr, "  baseline %d: go test %.2fs wall %.2fs CPU exit %d", i+1, g.Wall, g.CPU, g.Exit)
			// Alternate the labels' order between samples.
			for j := range labels {
				l := labels[(i+j)%len(labels)]
				p := fieldruns.Prepare(ctx, m, src, filepath.Join(mdir, "baseline-"+l.Name), l, o)
				b.Prepare[l.Name] = append(b.Prepare[l.Name], p.Timing)
				b.Commits[l.Name] = l.Commit
				fmt.Fprintf(os.Stderr, "; %s prepare %.2fs wall %.2fs CPU exit %d", l.Name, p.Wall, p.CPU, p.Exit)
			}
			fmt.Fprintln(os.Stderr)
			if ctx.Err() != nil {
				return
			}
		}
		store.Baselines[m.Name] = b
	}
	fmt.Fprintf(os.Stderr, "   %s done in %s\n", m.Name, time.Since(t0).Round(time.Second))
}

func goVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fieldruns:", err)
	os.Exit(2)
}
