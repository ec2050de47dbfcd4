package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/internal/pipeline/testrun"
	"github.com/memorder/wafl/internal/pipeline/workdir"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/plans"
)

// ReproduceOptions configure Reproduce.
type ReproduceOptions struct {
	Common
	Runs    int           // runs per bug (default 10)
	Timeout time.Duration // per run (default DefaultTimeout)
	// Instrument are the --instrument patterns the report's detection
	// used: the rebuilt binary must instrument the same dependencies.
	Instrument []string
}

// DefaultReproduceRuns is how often Reproduce repeats a bug's run.
const DefaultReproduceRuns = 10

// ReproduceResult is how often each bug of a report showed again.
type ReproduceResult struct {
	Bugs []ReproducedBug
}

// ReproducedBug is the reproduction rate of one bug.
type ReproducedBug struct {
	Bug        *report.Bug
	Runs, Hits int
}

// Reproduced reports whether any bug showed at least once.
func (r *ReproduceResult) Reproduced() bool {
	for _, b := range r.Bugs {
		if b.Hits > 0 {
			return true
		}
	}
	return false
}

// Reproduce re-runs the run that exposed each bug of the report file:
// the same test, the bug's own copy of the plan and the same seed, o.Runs
// times, and prints how often the bug showed. It builds the package first
// (the go command's cache makes that quick when nothing changed); when the
// binary differs from the one that found the bug, it says so and maps the
// plan's sites onto the new build by file, kind, expression and function,
// so that after a fix the same command is a fix check (0/N).
func Reproduce(ctx context.Context, o ReproduceOptions, file string) (*ReproduceResult, error) {
	if o.Runs < 1 {
		o.Runs = DefaultReproduceRuns
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	rep, err := report.ReadJSON(file)
	if err != nil {
		return nil, err
	}
	if len(rep.Bugs) == 0 {
		return nil, fmt.Errorf("%s: no bugs in the report", file)
	}
	ws, err := o.workspace()
	if err != nil {
		return nil, err
	}
	unlock, err := ws.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := &ReproduceResult{}
	builds := map[string]*pkgBuild{}
	for _, b := range rep.Bugs {
		if b.Reproduce.Plan == "" {
			return nil, fmt.Errorf("%s: bug %s in %s.%s has no plan copy (a report from an older wafl); run 'wafl detect' again",
				file, b.Kind, b.Package, b.Test)
		}
		pb := builds[b.Package]
		if pb == nil {
			fmt.Fprintf(o.Stderr, "building %s (instrumented) ...\n", b.Package)
			sum := new(Summary)
			pk := &Packages{Patterns: []string{b.Package}, Instrument: o.Instrument}
			built, err := build(ctx, &o.Common, pk, nil, ws, sum)
			if err != nil {
				return nil, err
			}
			if len(built) == 0 {
				return nil, fmt.Errorf("%s does not build: %s", b.Package, problemText(sum))
			}
			pb = built[0]
			builds[b.Package] = pb
		}
		n, err := reproduceBug(ctx, &o, ws, pb, b)
		if err != nil {
			return nil, err
		}
		res.Bugs = append(res.Bugs, ReproducedBug{Bug: b, Runs: o.Runs, Hits: n})
		fmt.Fprintf(o.Stdout, "%s in %s.%s (seed %d): reproduced %d/%d\n", b.Kind, b.Package, b.Test, b.Seed, n, o.Runs)
	}
	return res, nil
}

func problemText(sum *Summary) string {
	var parts []string
	for _, p := range sum.Problems {
		parts = append(parts, p.Reason)
	}
	if len(parts) == 0 {
		return "no test binary"
	}
	return strings.Join(parts, "; ")
}

// reproduceBug runs bug b's run o.Runs times on the binary pb and returns
// how often the same bug showed.
func reproduceBug(ctx context.Context, o *ReproduceOptions, ws *workdir.Dir, pb *pkgBuild, b *report.Bug) (int, error) {
	rp, err := newReplay(o, pb, b)
	if err != nil {
		return 0, err
	}
	hits := 0
	for k := 1; k <= o.Runs; k++ {
		rr, same, err := rp.run(ctx, ws.LogPath(b.Package, b.Test, "reproduce"+strconv.Itoa(k)))
		if err != nil {
			return 0, fmt.Errorf("run %d: %w", k, err)
		}
		if same {
			hits++
		}
		if o.Verbose {
			fmt.Fprintf(o.Stderr, "run %d/%d: %s\n", k, o.Runs, rp.verdict(rr, same))
		}
	}
	return hits, nil
}

// replay repeats the run that exposed a bug: the bug's own copy of the
// plan, its seed and run number, on a binary that may have changed since
// (its plan's sites mapped onto the new build).
type replay struct {
	o                *ReproduceOptions
	pb               *pkgBuild
	b                *report.Bug
	plan             *plans.Plan
	tab              *sites.Table
	delayed, failing uint32 // the bug's sites in pb's build (0: gone)
}

func newReplay(o *ReproduceOptions, pb *pkgBuild, b *report.Bug) (*replay, error) {
	plan, err := plans.Load(b.Reproduce.Plan)
	if err != nil {
		return nil, fmt.Errorf("the bug's plan: %w", err)
	}
	delayed, failing := b.Delayed.Site, b.Failing.Site
	tab, err := sites.Load(pb.Sites)
	if err != nil {
		return nil, err
	}
	if pb.hash == b.Reproduce.BinaryHash {
		fmt.Fprintf(o.Stderr, "the test binary is the one that found the bug\n")
	} else {
		fmt.Fprintf(o.Stderr, "the test binary changed since the bug was found: mapping the plan's sites onto the new build\n")
		var old *sites.Table
		if b.Reproduce.Sites != "" {
			if old, err = sites.Load(b.Reproduce.Sites); err != nil {
				return nil, err
			}
		}
		m := mapSites(old, tab, plan)
		plan.Remap(m)
		var ok bool
		if delayed, ok = m[delayed]; !ok {
			fmt.Fprintf(o.Stderr, "the delayed site %s:%d (%s) is not in the new build: the delay that exposed the bug cannot happen\n",
				b.Delayed.File, b.Delayed.Line, b.Delayed.Op)
		}
		failing = m[failing]
	}
	plan.SetBuild(pb.Binary, pb.Sites, pb.hash)
	return &replay{o: o, pb: pb, b: b, plan: plan, tab: tab, delayed: delayed, failing: failing}, nil
}

// run makes one replay, with its files at base.*, and reports whether the
// same bug showed.
func (rp *replay) run(ctx context.Context, base string) (*report.RunResult, bool, error) {
	b, pb := rp.b, rp.pb
	runPlan := base + ".plan.json"
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return nil, false, err
	}
	rp.plan.SetBinaryStamp(pb.runStamp())
	if err := plans.Save(runPlan, rp.plan); err != nil {
		return nil, false, err
	}
	logPath, crashPath := base+".wlog", base+".crash"
	os.Remove(logPath)
	os.Remove(crashPath)
	env := []string{
		abi.Env(abi.EnvMode, abi.ModeDetect),
		abi.Env(abi.EnvPlan, runPlan),
		abi.Env(abi.EnvSeed, strconv.FormatUint(b.Seed, 10)),
		abi.Env(abi.EnvRun, strconv.Itoa(b.Run)),
		abi.Env(abi.EnvLog, logPath),
		abi.Env(abi.EnvCrash, crashPath),
	}
	tr := testrun.Run{Binary: pb.Binary, Dir: pb.Dir, Test: b.Test, Env: env, Timeout: rp.o.Timeout, Output: base + ".log"}
	if i := slices.Index(b.Reproduce.Command, "-test.run"); i >= 0 && i+1 < len(b.Reproduce.Command) {
		// Keep the subtest selection of the original run.
		if _, sub, ok := strings.Cut(b.Reproduce.Command[i+1], "$/"); ok {
			tr.Sub = sub
		}
	}
	tr.Extra = extraArgs(b.Reproduce.Command)
	res, err := tr.Start(ctx)
	if err != nil {
		return nil, false, err
	}
	output, _ := os.ReadFile(res.Output)
	rr, err := report.Outcome(report.RunInput{
		Plan: rp.plan, PlanPath: runPlan, Sites: rp.tab,
		Package: b.Package, Test: b.Test, Binary: pb.Binary, Args: tr.Args(),
		Env: env, Run: b.Run, Seed: b.Seed,
		LogPath: logPath, CrashPath: crashPath, Stderr: output,
		ExitCode: res.ExitCode, Killed: res.TimedOut && res.ExitCode == -1, Duration: res.Duration, CPU: res.CPU,
	})
	if err != nil {
		return nil, false, err
	}
	if rr.Status == report.SetupFailed {
		return nil, false, fmt.Errorf("%s (output in %s)", rr.Reason, res.Output)
	}
	same := rr.Status == report.BugFound && rr.Bug.Kind == b.Kind &&
		rr.Bug.Delayed.Site == rp.delayed && (rp.failing == 0 || rr.Bug.Failing.Site == rp.failing)
	return rr, same, nil
}

// verdict says in words what a replay showed.
func (rp *replay) verdict(rr *report.RunResult, same bool) string {
	switch {
	case same:
		return "the bug"
	case rr.Status == report.BugFound:
		return fmt.Sprintf("another bug (%s at %s:%d)", rr.Bug.Kind, rr.Bug.Failing.File, rr.Bug.Failing.Line)
	case rr.Status != report.Pass:
		return fmt.Sprintf("%s: %s", rr.Status, rr.Reason)
	}
	return "no bug"
}

// extraArgs returns the -test.short and -test.cpu flags of the original
// run's command line.
func extraArgs(cmd []string) []string {
	var out []string
	for i, a := range cmd {
		switch {
		case a == "-test.short":
			out = append(out, a)
		case a == "-test.cpu" && i+1 < len(cmd):
			out = append(out, a, cmd[i+1])
		}
	}
	return out
}

// mapSites maps the sites plan mentions, described by old, onto the new
// site table: a site keeps its id when the new table has it with the same
// file, kind and expression (stable ids: nothing moved); otherwise it
// maps to the site of the new table with the same file, kind, expression
// and function nearest in line. Sites with no counterpart are left out.
func mapSites(old, cur *sites.Table, plan *plans.Plan) map[uint32]uint32 {
	m := map[uint32]uint32{}
	ids := plan.SiteIDs()
	for _, id := range ids {
		var os sites.Site
		found := false
		if old != nil {
			os, found = old.Lookup(id)
		}
		if ns, ok := cur.Lookup(id); ok && (!found || sameSite(os, ns)) {
			m[id] = id
			continue
		}
		if !found {
			continue
		}
		best, bestDist := uint32(0), -1
		for _, ns := range cur.Sites {
			if !sameSite(os, ns) || ns.Func != os.Func {
				continue
			}
			d := ns.Line - os.Line
			if d < 0 {
				d = -d
			}
			if bestDist < 0 || d < bestDist {
				best, bestDist = ns.ID, d
			}
		}
		if best != 0 {
			m[id] = best
		}
	}
	return m
}

func sameSite(a, b sites.Site) bool {
	return filepath.Base(a.File) == filepath.Base(b.File) && a.Kind == b.Kind && a.Expr == b.Expr
}

// saveBundle keeps what reproducing bug needs under the reports directory
// (docs/report-format.md): a copy of the plan the run read and the site
// table entries that plan mentions, and points the bug's reproduce record
// at them.
func saveBundle(ws *workdir.Dir, self string, j job, runPlan string, plan *plans.Plan, tab *sites.Table, bug *report.Bug) error {
	base := reportBase(ws, j.pkg.ImportPath, j.test) + fmt.Sprintf(".run%d-seed%d", bug.Run, bug.Seed)
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return err
	}
	data, err := os.ReadFile(runPlan)
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".plan.json", data, 0o644); err != nil {
		return err
	}
	sub := &sites.Table{Package: tab.Package}
	for _, id := range plan.SiteIDs() {
		if s, ok := tab.Lookup(id); ok {
			sub.Sites = append(sub.Sites, s)
		}
	}
	for _, id := range []uint32{bug.Delayed.Site, bug.Failing.Site} {
		if s, ok := tab.Lookup(id); ok && !slices.ContainsFunc(sub.Sites, func(x sites.Site) bool { return x.ID == id }) {
			sub.Sites = append(sub.Sites, s)
		}
	}
	if err := sub.Save(base + ".sites.json"); err != nil {
		return err
	}
	r := &bug.Reproduce
	r.Plan, r.Sites, r.BinaryHash = base+".plan.json", base+".sites.json", j.pkg.hash
	for i, e := range r.Env {
		if strings.HasPrefix(e, abi.EnvPlan+"=") {
			r.Env[i] = abi.Env(abi.EnvPlan, r.Plan)
		}
	}
	dir := ""
	if ws.Work != filepath.Join(ws.Root, ".wafl") {
		dir = " --dir " + ws.Rel(ws.Work)
	}
	r.Wafl = fmt.Sprintf("%s reproduce%s %s", self, dir, ws.Rel(reportBase(ws, j.pkg.ImportPath, j.test)+".json"))
	return nil
}
