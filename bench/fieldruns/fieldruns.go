// Package fieldruns runs wafl on a pinned set of real modules and tabulates
// what it saw (the field-runs table, docs/field-runs.md): per module
// the packages, tests, instrumented sites, recorded events, tests with delay
// candidates, delays injected, bug reports, tests that failed or did not
// build instrumented, and the time of `wafl prepare` and `wafl detect`, for
// one or more labeled wafl binaries side by side ("before" / "after" a
// change). It also measures prepare against plain `go test` on a few modules
// (the prepare-overhead baseline).
//
// Each module version is fetched through the Go module proxy (`go mod
// download -json`), copied out of the module cache into a work directory and
// made writable; the module cache is never modified. wafl runs with its work
// directory outside the copy (`--dir`). Numbers come from wafl's files —
// site tables (.wafl/bin/*.sites.json), plans (.wafl/plans, docs/plan-format.md),
// reports (.wafl/reports, `detect --json`) — and the summary wafl prints is
// parsed only for what no file holds (packages matched and built, tests run,
// tests skipped or failed).
//
// The command is bench/fieldruns/cmd/fieldruns (`make field-runs`).
package fieldruns

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// Module is one pinned module version (a row of bench/scripts/fieldruns/modules.tsv).
type Module struct {
	Name     string // short name used in the table and on the command line
	Path     string // module path
	Version  string
	Patterns []string // package patterns (default ./...)
	// Skip is a regular expression of tests left out (wafl --skip, go test
	// -skip) with the reason in Note: tests that run for minutes on one
	// goroutine or drive the go command, which the per-command bound of a
	// field run cannot afford on a busy machine. Empty: none.
	Skip string
	Note string
	// Short runs the tests in short mode (go test -short, wafl --short):
	// the token -short among the package patterns of the list.
	Short bool
}

// TestFlags are the module's flags for wafl prepare and detect.
func (m Module) TestFlags() []string {
	var f []string
	if m.Short {
		f = append(f, "--short")
	}
	if m.Skip != "" {
		f = append(f, "--skip", m.Skip)
	}
	return f
}

// GoTestFlags are the module's flags for plain go test (the same tests as
// TestFlags select).
func (m Module) GoTestFlags() []string {
	var f []string
	if m.Short {
		f = append(f, "-short")
	}
	if m.Skip != "" {
		f = append(f, "-skip", m.Skip)
	}
	return f
}

// ModVersion is "path@version".
func (m Module) ModVersion() string { return m.Path + "@" + m.Version }

// LoadModules reads the module list: tab-separated name, module path,
// version, package patterns (space-separated, "-" for ./...; the token
// -short among them sets Short), tests to skip
// (a regular expression as go test -skip, "-" for none) and an optional
// note; '#' starts a comment line. With names, only those modules
// are returned (an unknown name is an error).
func LoadModules(path string, names ...string) ([]Module, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []Module
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 3 {
			return nil, fmt.Errorf("%s:%d: want name, module, version[, patterns[, skip[, note]]] separated by tabs", path, n)
		}
		m := Module{Name: cols[0], Path: cols[1], Version: cols[2], Patterns: []string{"./..."}}
		if len(cols) > 3 {
			var pats []string
			for _, f := range strings.Fields(cols[3]) {
				switch {
				case f == "-":
				case f == "-short":
					m.Short = true
				case strings.HasPrefix(f, "-"):
					return nil, fmt.Errorf("%s:%d: patterns: unknown flag %q (only -short)", path, n, f)
				default:
					pats = append(pats, f)
				}
			}
			if len(pats) > 0 {
				m.Patterns = pats
			}
		}
		if len(cols) > 4 && cols[4] != "-" {
			m.Skip = strings.TrimSpace(cols[4])
			if _, err := regexp.Compile(m.Skip); err != nil {
				return nil, fmt.Errorf("%s:%d: skip: %v", path, n, err)
			}
		}
		if len(cols) > 5 {
			m.Note = cols[5]
		}
		if !strings.HasPrefix(m.Version, "v") {
			return nil, fmt.Errorf("%s:%d: version %q is not a module version", path, n, m.Version)
		}
		all = append(all, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return all, nil
	}
	var out []Module
	for _, name := range names {
		found := false
		for _, m := range all {
			if m.Name == name || m.Path == name {
				out = append(out, m)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: no module %q", path, name)
		}
	}
	return out, nil
}

// Timing is the cost of one command: wall time and the CPU time (user +
// system) of the process and the children it waited for.
type Timing struct {
	Wall     float64 `json:"wall_s"`
	CPU      float64 `json:"cpu_s"`
	Exit     int     `json:"exit"`
	TimedOut bool    `json:"timed_out,omitempty"`
}

// BugRef identifies one bug report.
type BugRef struct {
	Package string `json:"package"`
	Test    string `json:"test"`
	Kind    string `json:"kind"`
	Panic   string `json:"panic"`
	Delayed string `json:"delayed"` // file:line expr (op) in func
	Failing string `json:"failing"`
	Partner string `json:"partner,omitempty"`
	File    string `json:"file"` // the report file, relative to the work directory
}

// Result is what one wafl binary did on one module.
type Result struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	Status  string `json:"status"`         // "ok", or what went wrong ("prepare timed out", ...)
	Skip    string `json:"skip,omitempty"` // the module's --skip when this ran

	// From the summary wafl prints.
	Packages       int `json:"packages"`
	Built          int `json:"built"`
	TestsRun       int `json:"tests_run"`
	WithCandidates int `json:"with_candidates_summary"`
	DetectRuns     int `json:"detect_runs_summary"`
	DelaysSummary  int `json:"delays_summary"`
	BugsSummary    int `json:"bugs_summary"`
	// Problems are the "skipped or failed" lines of prepare and detect.
	Problems []string `json:"problems,omitempty"`
	// BuildFailures counts packages that did not instrument or build;
	// TestFailures tests that failed or timed out (without delays in
	// prepare, with them in detect, without a MEMORDER panic).
	BuildFailures int `json:"build_failures"`
	TestFailures  int `json:"test_failures"`

	// From the work directory.
	Stats

	// Bugs are the reports detect wrote.
	Bugs []BugRef `json:"bugs,omitempty"`

	Prepare Timing `json:"prepare"`
	Detect  Timing `json:"detect"`
}

// Stats are the numbers read from a wafl work directory.
type Stats struct {
	Sites       int            `json:"sites"`
	SitesByKind map[string]int `json:"sites_by_kind,omitempty"`
	Plans       int            `json:"plans"`           // tests with a plan (prepared)
	Candidates  int            `json:"with_candidates"` // plans with ≥1 delay location
	Locations   int            `json:"locations"`
	Pairs       int            `json:"pairs"`
	// PairsFrom counts the pairs by the plans' pair "from" field:
	// "observed" (absent: the preparation run), "learn", "detect",
	// "predicted", "static", "mirror".
	PairsFrom     map[string]int `json:"pairs_from,omitempty"`
	Events        int64          `json:"events"`
	MaxEvents     int64          `json:"max_events"`
	MaxEventsTest string         `json:"max_events_test,omitempty"`
	Runs          int            `json:"runs"`   // detection runs recorded in plans
	Delays        int            `json:"delays"` // delays injected, from the plans' runs
	RunOutcomes   map[string]int `json:"run_outcomes,omitempty"`
	Reports       int            `json:"reports"` // report files
	// PairList are the candidate pairs of all plans, most delayed first.
	PairList []PairSummary `json:"pair_list,omitempty"`
	// The critical path of prepare and detect: the longest preparation
	// run of one test (provenance.duration_ns; a test run in its
	// package's process counts its own part) and the longest chain of
	// one test's detection runs (the sum of their duration_ns: a test's
	// runs follow one another, each starting from the plan the one before
	// left; runs side by side, "beside", count as the longest of them). No scheduling makes prepare + detect shorter than their sum.
	LongestPrepNs    int64  `json:"longest_prepare_ns,omitempty"`
	LongestPrepTest  string `json:"longest_prepare_test,omitempty"`
	LongestChainNs   int64  `json:"longest_detect_chain_ns,omitempty"`
	LongestChainTest string `json:"longest_detect_chain_test,omitempty"`
	// RunsCPUNs is the CPU time (user + system) of the detection runs'
	// test processes, from the plans' runs (cpu_ns), and RunsWithCPU how
	// many runs carry it (runs of a wafl older than the field have none).
	RunsCPUNs   int64 `json:"runs_cpu_ns,omitempty"`
	RunsWithCPU int   `json:"runs_with_cpu,omitempty"`
}

// PairSummary is one candidate pair over a module's plans.
type PairSummary struct {
	Pair   string `json:"pair"`   // "kind: ℓ1 → ℓ2", sites as "kind expr file:line"
	Tests  int    `json:"tests"`  // plans that have it
	Delays int    `json:"delays"` // delays injected at its ℓ1 in those plans
}

// Label is one wafl binary and where it came from.
type Label struct {
	Name    string `json:"name"`
	Binary  string `json:"binary"`
	Commit  string `json:"commit"`
	Version string `json:"version"`
}

// LabelRun is one invocation's results for one label.
type LabelRun struct {
	Label   Label              `json:"label"`
	Date    time.Time          `json:"date"`
	Machine string             `json:"machine"`
	Go      string             `json:"go"`
	Command string             `json:"command"`
	Flags   []string           `json:"wafl_flags"`
	Results map[string]*Result `json:"results"` // by module name
}

// Baseline compares `wafl prepare` with plain `go test -count=1` on one
// module: samples taken alternately in one invocation.
type Baseline struct {
	Module  string              `json:"module"`
	Version string              `json:"version"`
	Date    time.Time           `json:"date"`
	Machine string              `json:"machine"`
	Command string              `json:"command"`
	GoTest  []Timing            `json:"go_test"`
	Prepare map[string][]Timing `json:"prepare"` // by label
	Commits map[string]string   `json:"commits"` // by label
	// Load is the 1-minute load average when each sample started.
	Load []float64 `json:"load1,omitempty"`
}

// PairedMedian is the median over samples i of a[i]/b[i] (samples taken
// in the same round, so that a drift of the machine's load cancels); 0
// without a common positive sample.
func PairedMedian(a, b []float64) float64 {
	var r []float64
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] > 0 && b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return Median(r)
}

// Store is everything kept between invocations (results.json): the latest
// run of every label and the latest baseline of every module.
type Store struct {
	Labels    map[string]*LabelRun `json:"labels"`
	Order     []string             `json:"order"` // label order of the table columns
	Baselines map[string]*Baseline `json:"baselines,omitempty"`
}
