package hunt

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Classes of the triage: what a report, a test broken by delays or a wafl
// error turned out to be.
const (
	// ClassProduct: a panic or failure in the module's own code under a
	// schedule its API allows.
	ClassProduct = "product bug"
	// ClassTest: the test's own code uses what it never waited for.
	ClassTest = "test bug"
	// ClassArtifact: a delay longer than a timing assumption of the test
	// (a deadline, a sleep before an assertion, a bound on elapsed time).
	ClassArtifact = "artifact"
	// ClassFalse: wafl's doing (a wafl bug), not the module's.
	ClassFalse = "false report"
)

var classes = []string{ClassProduct, ClassTest, ClassArtifact, ClassFalse}

// Verdict is one hand-made classification of the triage file.
type Verdict struct {
	Module string // the list's name
	What   string // "pkg.Test" (a broken test or a report's test) or "error:<what>" (a wafl error)
	Class  string // one of classes
	Cause  string // a short key grouping verdicts of one class ("deadline", "sleep-then-assert", …)
	Reason string // one line
}

// Triage is the triage file's verdicts by module and what.
type Triage map[string]map[string]Verdict

// LoadTriage reads the triage file (bench/scripts/hunt/triage.tsv): lines
// module<TAB>what<TAB>class<TAB>cause<TAB>reason, # comments. A missing file
// is an empty triage.
func LoadTriage(path string) (Triage, error) {
	t := Triage{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 5 {
			return nil, fmt.Errorf("%s:%d: want module, what, class, cause, reason separated by tabs (%d columns)", path, n, len(cols))
		}
		v := Verdict{Module: cols[0], What: cols[1], Class: cols[2], Cause: cols[3], Reason: cols[4]}
		known := false
		for _, c := range classes {
			known = known || v.Class == c
		}
		if !known {
			return nil, fmt.Errorf("%s:%d: class %q is none of %s", path, n, v.Class, strings.Join(classes, ", "))
		}
		if v.Cause == "" || v.Reason == "" {
			return nil, fmt.Errorf("%s:%d: empty cause or reason", path, n)
		}
		if t[v.Module] == nil {
			t[v.Module] = map[string]Verdict{}
		}
		if _, dup := t[v.Module][v.What]; dup {
			return nil, fmt.Errorf("%s:%d: %s %s twice", path, n, v.Module, v.What)
		}
		t[v.Module][v.What] = v
	}
	return t, sc.Err()
}

// lookup is the verdict for what of module name, if any.
func (t Triage) lookup(name, what string) (Verdict, bool) {
	v, ok := t[name][what]
	return v, ok
}

// item is one thing to triage in the stored results.
type item struct {
	module, what, kind string // kind: "report", "broken", "error"
}

// items are the things to triage: every report, every test broken by
// delays, every wafl error of the results run, in list order.
func items(run []*Result) []item {
	var out []item
	for _, r := range run {
		for _, rep := range r.Reports {
			out = append(out, item{r.Name, rep.Package + "." + rep.Test, "report"})
		}
		for _, b := range r.Broken {
			out = append(out, item{r.Name, b.Package + "." + b.Test, "broken"})
		}
		for _, e := range r.WaflErrors {
			out = append(out, item{r.Name, "error:" + e.What, "error"})
		}
	}
	return out
}

// triageSection renders the counts by class and cause and the verdicts
// grouped by cause, then what has no verdict yet.
func triageSection(run []*Result, t Triage) string {
	its := items(run)
	if len(its) == 0 {
		return ""
	}
	type group struct {
		class, cause string
		lines        []string
		modules      map[string]bool
		kinds        map[string]int
	}
	groups := map[string]*group{}
	var untriaged []string
	byClass := map[string]int{}
	for _, it := range its {
		v, ok := t.lookup(it.module, it.what)
		if !ok {
			untriaged = append(untriaged, fmt.Sprintf("**%s** %s (%s)", it.module, it.what, it.kind))
			continue
		}
		key := v.Class + "\x00" + v.Cause
		g := groups[key]
		if g == nil {
			g = &group{class: v.Class, cause: v.Cause, modules: map[string]bool{}, kinds: map[string]int{}}
			groups[key] = g
		}
		g.lines = append(g.lines, fmt.Sprintf("- **%s** %s (%s): %s", it.module, it.what, it.kind, v.Reason))
		g.modules[it.module] = true
		g.kinds[it.kind]++
		byClass[v.Class]++
	}
	var gs []*group
	for _, g := range groups {
		gs = append(gs, g)
	}
	rank := func(c string) int {
		for i, x := range classes {
			if x == c {
				return i
			}
		}
		return len(classes)
	}
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].class != gs[j].class {
			return rank(gs[i].class) < rank(gs[j].class)
		}
		if len(gs[i].lines) != len(gs[j].lines) {
			return len(gs[i].lines) > len(gs[j].lines)
		}
		return gs[i].cause < gs[j].cause
	})
	var b strings.Builder
	b.WriteString("## Triage\n\n")
	fmt.Fprintf(&b, "Every report, test broken by delays and wafl error above, classified by hand in bench/scripts/hunt/triage.tsv "+
		"(module, what, class, cause, one-line reason) after reading its run logs and the test's source: *product bug* "+
		"(the module's code fails under a schedule its API allows), *test bug* (the test's own code uses what it never "+
		"waited for), *artifact* (a delay longer than a timing assumption of the test), *false report* (wafl's doing). "+
		"%d of %d items classified", len(its)-len(untriaged), len(its))
	var cs []string
	for _, c := range classes {
		if byClass[c] > 0 {
			cs = append(cs, fmt.Sprintf("%d %s", byClass[c], c))
		}
	}
	if len(cs) > 0 {
		b.WriteString(": " + strings.Join(cs, ", "))
	}
	b.WriteString(".\n\n| class | cause | items | reports / broken / errors | modules |\n|---|---|--:|--:|---|\n")
	for _, g := range gs {
		var ms []string
		for m := range g.modules {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		fmt.Fprintf(&b, "| %s | %s | %d | %d / %d / %d | %s |\n", g.class, g.cause, len(g.lines),
			g.kinds["report"], g.kinds["broken"], g.kinds["error"], strings.Join(ms, ", "))
	}
	b.WriteString("\n")
	for _, g := range gs {
		fmt.Fprintf(&b, "### %s: %s (%d)\n\n%s\n\n", g.class, g.cause, len(g.lines), strings.Join(g.lines, "\n"))
	}
	if len(untriaged) > 0 {
		fmt.Fprintf(&b, "### Not triaged yet (%d)\n\n- %s\n\n", len(untriaged), strings.Join(untriaged, "\n- "))
	}
	return b.String()
}

// verdictLine is the triage line under a listed item, "" without a verdict.
func verdictLine(t Triage, name, what string) string {
	v, ok := t.lookup(name, what)
	if !ok {
		return ""
	}
	return fmt.Sprintf("  - triage: **%s** (%s): %s\n", v.Class, v.Cause, v.Reason)
}
