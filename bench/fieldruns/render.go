package fieldruns

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// LoadStore reads results.json; a missing file is an empty store.
func LoadStore(path string) (*Store, error) {
	s := &Store{Labels: map[string]*LabelRun{}, Baselines: map[string]*Baseline{}}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Labels == nil {
		s.Labels = map[string]*LabelRun{}
	}
	if s.Baselines == nil {
		s.Baselines = map[string]*Baseline{}
	}
	return s, nil
}

// Save writes the store.
func (s *Store) Save(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// AddLabel puts a label's run in the store, keeping the column order.
func (s *Store) AddLabel(lr *LabelRun) {
	s.Labels[lr.Label.Name] = lr
	for _, n := range s.Order {
		if n == lr.Label.Name {
			return
		}
	}
	s.Order = append(s.Order, lr.Label.Name)
}

func (s *Store) labels() []*LabelRun {
	var out []*LabelRun
	for _, n := range s.Order {
		if lr := s.Labels[n]; lr != nil {
			out = append(out, lr)
		}
	}
	return out
}

// Median of v (0 for none).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func walls(ts []Timing) []float64 {
	var v []float64
	for _, t := range ts {
		v = append(v, t.Wall)
	}
	return v
}

func cpus(ts []Timing) []float64 {
	var v []float64
	for _, t := range ts {
		v = append(v, t.CPU)
	}
	return v
}

// Markdown renders the tables for the modules (in order) from the store;
// intro is put before them and notes after them.
func Markdown(mods []Module, s *Store, intro, notes string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n", strings.TrimRight(intro, "\n"))
	ls := s.labels()
	if len(ls) == 0 {
		w("\nNo results yet: run `make field-runs`.\n")
		return b.String()
	}

	w("\n## Runs\n\n")
	w("| label | wafl commit | binary | date (UTC) | machine | go | commands |\n|---|---|---|---|---|---|---|\n")
	for _, lr := range ls {
		w("| %s | %s | `%s` | %s | %s | %s | %d, below |\n", lr.Label.Name, orDash(lr.Label.Commit), lr.Label.Binary,
			lr.Date.UTC().Format("2006-01-02 15:04"), cell(lr.Machine), lr.Go, len(strings.Split(lr.Command, "; then ")))
	}
	// The invocations that filled each column, in order (a later one
	// replaces the modules it ran).
	for _, lr := range ls {
		w("\n%s:\n\n", lr.Label.Name)
		for _, c := range strings.Split(lr.Command, "; then ") {
			w("- `%s`\n", strings.ReplaceAll(strings.TrimSpace(c), "`", "'"))
		}
	}
	w("\nwafl flags of every module: `%s`.\n", strings.Join(ls[len(ls)-1].Flags, " "))
	var skips []string
	for _, m := range mods {
		if m.Skip != "" {
			line := fmt.Sprintf("- %s: `--skip '%s'`", m.Name, m.Skip)
			if m.Note != "" {
				line += " — " + m.Note
			}
			// A stored result run with other tests left out says so.
			for _, lr := range ls {
				if r := lr.Results[m.Name]; r != nil && r.Version == m.Version && r.Status != "" && r.Skip != m.Skip {
					if r.Skip == "" {
						line += fmt.Sprintf(" (the %s column ran them)", lr.Label.Name)
					} else {
						line += fmt.Sprintf(" (the %s column was run with `--skip '%s'`)", lr.Label.Name, r.Skip)
					}
				}
			}
			skips = append(skips, line)
		}
	}
	if len(skips) > 0 {
		w("\nTests left out (wafl `--skip` in prepare and detect, `go test -skip` in the baseline; bench/scripts/fieldruns/modules.tsv):\n\n%s\n", strings.Join(skips, "\n"))
	}

	names := make([]string, len(ls))
	for i, lr := range ls {
		names[i] = lr.Label.Name
	}
	w("\n## Table\n\nEach cell is %s.\n\n", strings.Join(names, " / "))
	w("| module | packages built | tests run | sites | events | tests with candidates | delays | bug reports | tests failing in prepare | tests failing in detect | prepare s | detect s | status |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	get := func(lr *LabelRun, m Module) *Result {
		r := lr.Results[m.Name]
		if r == nil || r.Version != m.Version {
			return nil
		}
		return r
	}
	for _, m := range mods {
		col := func(f func(r *Result) string) string {
			var parts []string
			for _, lr := range ls {
				if r := get(lr, m); r != nil {
					parts = append(parts, f(r))
				} else {
					parts = append(parts, "–")
				}
			}
			return strings.Join(parts, " / ")
		}
		w("| %s %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", m.Path, m.Version,
			col(func(r *Result) string { return fmt.Sprintf("%d of %d", r.Built, r.Packages) }),
			col(func(r *Result) string { return fmt.Sprint(r.TestsRun) }),
			col(func(r *Result) string { return fmt.Sprint(r.Sites) }),
			col(func(r *Result) string { return human(r.Events) }),
			col(func(r *Result) string { return fmt.Sprint(r.Candidates) }),
			col(func(r *Result) string { return fmt.Sprint(r.Delays) }),
			col(func(r *Result) string { return fmt.Sprint(max(r.Reports, len(r.Bugs))) }),
			col(func(r *Result) string { return fmt.Sprint(r.phaseFailures("prepare")) }),
			col(func(r *Result) string { return fmt.Sprint(r.phaseFailures("detect")) }),
			col(func(r *Result) string { return secs(r.Prepare) }),
			col(func(r *Result) string { return secs(r.Detect) }),
			col(func(r *Result) string { return r.Status }),
		)
	}

	w("\n## Details\n")
	for _, lr := range ls {
		w("\n### %s (%s)\n\n", lr.Label.Name, orDash(lr.Label.Commit))
		w("| module | sites by kind | plans | locations / pairs | largest trace | detection runs (outcomes) | prepare CPU s | detect CPU s |\n")
		w("|---|---|---|---|---|---|---|---|\n")
		for _, m := range mods {
			r := get(lr, m)
			if r == nil {
				w("| %s | not run | | | | | | |\n", m.Name)
				continue
			}
			w("| %s | %s | %d | %d / %d | %s | %d (%s) | %.1f | %.1f |\n", m.Name, kinds(r.SitesByKind), r.Plans,
				r.Locations, r.Pairs, largest(r), r.Runs, kinds(r.RunOutcomes), r.Prepare.CPU, r.Detect.CPU)
		}
		var probs []string
		for _, m := range mods {
			r := get(lr, m)
			if r == nil {
				continue
			}
			if r.TestsRun != r.Plans {
				probs = append(probs, fmt.Sprintf("%s: the summary says %d tests run, the work directory has %d plans", m.Name, r.TestsRun, r.Plans))
			}
			if r.Status == "ok" && r.DelaysSummary != r.Delays {
				probs = append(probs, fmt.Sprintf("%s: the summary says %d delays, the plans record %d", m.Name, r.DelaysSummary, r.Delays))
			}
			for _, p := range r.Problems {
				probs = append(probs, m.Name+": "+p)
			}
			for _, bug := range r.Bugs {
				probs = append(probs, fmt.Sprintf("%s: BUG REPORT %s in %s.%s: %s; delayed %s; failing %s%s (%s)", m.Name,
					bug.Kind, bug.Package, bug.Test, bug.Panic, bug.Delayed, bug.Failing, partner(bug.Partner), bug.File))
			}
		}
		w("\n<details><summary>Candidate pairs (%s): kind: ℓ1 → ℓ2, tests with the pair, delays at ℓ1</summary>\n\n", lr.Label.Name)
		for _, m := range mods {
			r := get(lr, m)
			if r == nil || len(r.PairList) == 0 {
				continue
			}
			w("- %s:\n", m.Name)
			for i, p := range r.PairList {
				if i == 15 {
					w("  - … %d more\n", len(r.PairList)-i)
					break
				}
				w("  - %s — %d tests, %d delays\n", cell(p.Pair), p.Tests, p.Delays)
			}
		}
		w("\n</details>\n")
		if len(probs) > 0 {
			w("\nSkipped or failed tests, bug reports and inconsistencies (%s):\n\n", lr.Label.Name)
			for _, p := range probs {
				w("- %s\n", cell(p))
			}
		}
	}

	if len(s.Baselines) > 0 {
		w("\n## Prepare against plain `go test`\n\n")
		w("Median of the samples, taken alternately in one invocation (go test, then each label's prepare " +
			"with a fresh work directory). Ratio = prepare / go test.\n\n")
		w("| module | samples | go test wall s | go test CPU s |")
		var bl []*Baseline
		for _, m := range mods {
			if x := s.Baselines[m.Name]; x != nil && x.Version == m.Version {
				bl = append(bl, x)
			}
		}
		var lnames []string
		for _, x := range bl {
			for n := range x.Prepare {
				if !containsStr(lnames, n) {
					lnames = append(lnames, n)
				}
			}
		}
		sort.SliceStable(lnames, func(i, j int) bool { return orderOf(s.Order, lnames[i]) < orderOf(s.Order, lnames[j]) })
		for _, n := range lnames {
			w(" %s prepare wall s (ratio) | %s prepare CPU s (ratio) |", n, n)
		}
		w(" date |\n|---|---|---|---|")
		for range lnames {
			w("---|---|")
		}
		w("---|\n")
		for _, x := range bl {
			gw, gc := Median(walls(x.GoTest)), Median(cpus(x.GoTest))
			w("| %s %s | %d | %.2f | %.2f |", x.Module, x.Version, len(x.GoTest), gw, gc)
			for _, n := range lnames {
				ts := x.Prepare[n]
				if len(ts) == 0 {
					w(" – | – |")
					continue
				}
				pw, pc := Median(walls(ts)), Median(cpus(ts))
				w(" %.2f (%.2f×) | %.2f (%.2f×) |", pw, ratio(pw, gw), pc, ratio(pc, gc))
			}
			w(" %s |\n", x.Date.UTC().Format("2006-01-02 15:04"))
		}
		w("\nThe same samples paired by round (median over rounds i of prepare_i / go test_i, and of each label's " +
			"prepare_i / the first label's prepare_i − 1: the overhead change), with the 1-minute load average at the rounds' starts:\n\n")
		w("| module | rounds | load average |")
		for _, n := range lnames {
			w(" %s / go test wall | %s / go test CPU |", n, n)
		}
		for _, n := range lnames[min(1, len(lnames)):] {
			w(" %s vs %s wall | %s vs %s CPU |", n, lnames[0], n, lnames[0])
		}
		w("\n|---|---|---|")
		for range lnames {
			w("---|---|")
		}
		for range lnames[min(1, len(lnames)):] {
			w("---|---|")
		}
		w("\n")
		for _, x := range bl {
			load := "–"
			if len(x.Load) > 0 {
				lo, hi := x.Load[0], x.Load[0]
				for _, l := range x.Load {
					lo, hi = min(lo, l), max(hi, l)
				}
				load = fmt.Sprintf("%.1f–%.1f", lo, hi)
			}
			w("| %s | %d | %s |", x.Module, len(x.GoTest), load)
			for _, n := range lnames {
				if len(x.Prepare[n]) == 0 {
					w(" – | – |")
					continue
				}
				w(" %.2f× | %.2f× |", PairedMedian(walls(x.Prepare[n]), walls(x.GoTest)), PairedMedian(cpus(x.Prepare[n]), cpus(x.GoTest)))
			}
			for _, n := range lnames[min(1, len(lnames)):] {
				first := x.Prepare[lnames[0]]
				pct := func(v float64) string {
					if v == 0 {
						return "–"
					}
					return fmt.Sprintf("%+.1f %%", 100*(v-1))
				}
				w(" %s | %s |", pct(PairedMedian(walls(x.Prepare[n]), walls(first))), pct(PairedMedian(cpus(x.Prepare[n]), cpus(first))))
			}
			w("\n")
		}
		for _, x := range bl {
			w("\n%s samples (wall s / CPU s): go test", x.Module)
			for _, t := range x.GoTest {
				w(" %.2f/%.2f", t.Wall, t.CPU)
			}
			for _, n := range lnames {
				if len(x.Prepare[n]) == 0 {
					continue
				}
				w("; %s (%s) prepare", n, orDash(x.Commits[n]))
				for _, t := range x.Prepare[n] {
					w(" %.2f/%.2f", t.Wall, t.CPU)
					if t.Exit != 0 {
						w(" (exit %d)", t.Exit)
					}
				}
			}
			w(".")
			if x.Command != "" {
				w(" Commands: `%s`.", x.Command)
			}
			w("\n")
		}
	}
	if strings.TrimSpace(notes) != "" {
		w("\n%s\n", strings.TrimRight(notes, "\n"))
	}
	return b.String()
}

func orderOf(order []string, n string) int {
	for i, x := range order {
		if x == n {
			return i
		}
	}
	return len(order)
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func partner(p string) string {
	if p == "" {
		return ""
	}
	return "; partner " + p
}

func largest(r *Result) string {
	if r.MaxEventsTest == "" {
		return "–"
	}
	return fmt.Sprintf("%s (%s)", human(r.MaxEvents), r.MaxEventsTest)
}

func kinds(m map[string]int) string {
	if len(m) == 0 {
		return "–"
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func secs(t Timing) string {
	if t.Wall == 0 && t.Exit == 0 {
		return "–"
	}
	s := fmt.Sprintf("%.1f", t.Wall)
	if t.TimedOut {
		s += " (timeout)"
	}
	return s
}

func human(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.0f M", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1f M", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0f k", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\n", " ")
	s = reOutput.ReplaceAllString(s, "")
	if len(s) > 700 {
		s = s[:700] + "…"
	}
	return s
}

var reOutput = regexp.MustCompile(`;? ?\(?output in /\S+\)?`)

// phaseFailures counts the problems of one phase ("prepare": tests failing
// or timing out without delays, "detect": with delays, without a MEMORDER
// panic).
func (r *Result) phaseFailures(phase string) int {
	n := 0
	for _, p := range r.Problems {
		if ProblemPhase(p) == phase {
			n++
		}
	}
	return n
}

// Today is the date stamp used in the document.
func Today() string { return time.Now().UTC().Format("2006-01-02") }
