package fieldruns

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memorder/wafl/internal/pipeline"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/plans"
)

// TestParseSummary parses what pipeline.Summary.Print writes, so a change
// of wafl's summary wording breaks this test rather than the table.
func TestParseSummary(t *testing.T) {
	s := &pipeline.Summary{Packages: 4, PackagesBuilt: 3, Tests: 29, Prepared: 27, WithCandidates: 5,
		Runs: 12, Delays: 40, Bugs: []*report.Bug{{}, {}},
		Problems: []pipeline.Problem{
			{Package: "ex.com/m/b", Phase: "build", Reason: "building instrumented test binary: boom"},
			{Package: "ex.com/m", Test: "TestA", Phase: "detect", Reason: "failed under delays:\nrun 1: panic: x\nrun 2: panic: y"},
			{Package: "ex.com/m", Test: "TestB", Phase: "prepare", Reason: "test failed without delays"},
		}}
	var buf bytes.Buffer
	s.Print(&buf, true)
	buf.WriteString("seed:     1 (repeat with --seed 1)\n2 bugs found\n")
	got := ParseSummary("wafl: some progress\n" + buf.String())
	want := Summary{Found: true, Packages: 4, Built: 3, TestsRun: 29, Prepared: 27, WithCandidates: 5, Runs: 12, Delays: 40, Bugs: 2}
	probs := got.Problems
	got.Problems = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseSummary = %+v, want %+v\ninput:\n%s", got, want, buf.String())
	}
	if len(probs) != 3 {
		t.Fatalf("problems = %q, want 3", probs)
	}
	phases := map[string]int{}
	for _, p := range probs {
		phases[ProblemPhase(p)]++
	}
	if phases["build"] != 1 || phases["detect"] != 1 || phases["prepare"] != 1 {
		t.Errorf("phases %v of %q", phases, probs)
	}
	for _, p := range probs {
		if ProblemPhase(p) == "detect" && !strings.Contains(p, "run 2: panic: y") {
			t.Errorf("continuation lines lost: %q", p)
		}
	}
	// The wording of wafl at 8843844 (the stored "before" column).
	old := ParseSummary("packages: 2 matched, 2 built\ntests:    58 run, 58 prepared, 14 with delay candidates\n" +
		"detect:   35 runs, 390 delays injected, 0 bugs found\n")
	if old.TestsRun != 58 || old.Prepared != 58 || old.WithCandidates != 14 || old.Runs != 35 || old.Delays != 390 {
		t.Errorf("old wording: %+v", old)
	}
	if ParseSummary("no summary here").Found {
		t.Error("Found without a packages line")
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCollectWork(t *testing.T) {
	dir := t.TempDir()
	// Two packages built together share one site table; a third was built
	// alone. Sites are counted once.
	shared := map[string]any{"version": 1, "sites": []map[string]any{
		{"id": 1, "kind": "store", "file": "/m/a.go", "line": 3, "col": 2, "expr": "s.p"},
		{"id": 2, "kind": "use", "file": "/m/a.go", "line": 9, "col": 2, "expr": "s.p"},
	}}
	writeJSON(t, filepath.Join(dir, "bin/ex.com/m.sites.json"), shared)
	writeJSON(t, filepath.Join(dir, "bin/ex.com/m/sub.sites.json"), shared)
	writeJSON(t, filepath.Join(dir, "bin/ex.com/other.sites.json"), map[string]any{"version": 1, "sites": []map[string]any{
		{"id": 1, "kind": "close", "file": "/m/o.go", "line": 1, "col": 1, "expr": "ch"},
	}})

	p := &plans.Plan{Version: plans.Version, Params: plans.DefaultParams(),
		Provenance: plans.Provenance{Package: "ex.com/m", Test: "TestA", Events: 1500, Sites: "/elsewhere/bin/ex.com/m.sites.json", DurationNs: 2e9},
		Locations: []plans.Location{{Site: 1, DelayNs: 1e6, Prob: 1, Pairs: []plans.Pair{
			{Kind: plans.UseBeforeInit, First: 1, Second: 2, Count: 1},
		}}},
		Runs: []plans.Run{{N: 1, Delays: 3, Outcome: "pass", DurationNs: 3e9, CPUNs: 5e8}, {N: 2, Delays: 1, Outcome: "fail", DurationNs: 4e9, CPUNs: 25e7}},
	}
	writeJSON(t, filepath.Join(dir, "plans/ex.com/m/TestA.json"), p)
	writeJSON(t, filepath.Join(dir, "plans/ex.com/m/TestB.json"), &plans.Plan{Version: plans.Version,
		Provenance: plans.Provenance{Package: "ex.com/m", Test: "TestB", Events: 20, DurationNs: 5e9}})
	// TestC's second and third runs ran side by side: its chain is 2 + 4 s,
	// not the 9 s its runs add up to.
	writeJSON(t, filepath.Join(dir, "plans/ex.com/m/TestC.json"), &plans.Plan{Version: plans.Version,
		Provenance: plans.Provenance{Package: "ex.com/m", Test: "TestC"},
		Runs:       []plans.Run{{N: 1, Outcome: "pass", DurationNs: 2e9}, {N: 2, Outcome: "pass", DurationNs: 3e9, Beside: 2}, {N: 3, Outcome: "pass", DurationNs: 4e9, Beside: 2}}})
	writeJSON(t, filepath.Join(dir, "plans/ex.com/m/TestP.json"), &plans.Plan{Version: plans.Version, Params: plans.DefaultParams(),
		Provenance: plans.Provenance{Package: "ex.com/m", Test: "TestP", Events: 10},
		Locations: []plans.Location{{Site: 2, DelayNs: 1e6, Prob: 1, Pairs: []plans.Pair{
			{Kind: plans.UseAfterDispose, First: 2, Second: 1, Count: 1, From: plans.FromPredicted},
		}}}})
	bug := &report.Bug{Kind: plans.UseBeforeInit, Panic: "runtime error: invalid memory address or nil pointer dereference",
		Package: "ex.com/m", Test: "TestA",
		Delayed: report.Location{Site: 1, File: "/m/a.go", Line: 3, Op: "store", Expr: "s.p", Func: "(*S).Start"},
		Failing: report.Location{Site: 2, File: "/m/a.go", Line: 9, Op: "use", Expr: "s.p", Func: "(*S).loop"}}
	var rep bytes.Buffer
	if err := report.WriteJSON(&rep, []*report.Bug{bug}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "reports/ex.com/m"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reports/ex.com/m/TestA.json"), rep.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	st, bugs, err := CollectWork(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sites != 3 || st.SitesByKind["store"] != 1 || st.SitesByKind["close"] != 1 {
		t.Errorf("sites = %d %v, want 3 (store, use, close)", st.Sites, st.SitesByKind)
	}
	if st.Plans != 4 || st.Candidates != 2 || st.Locations != 2 || st.Pairs != 2 {
		t.Errorf("plans %d candidates %d locations %d pairs %d, want 4 2 2 2", st.Plans, st.Candidates, st.Locations, st.Pairs)
	}
	if st.Events != 1530 || st.MaxEvents != 1500 || st.MaxEventsTest != "ex.com/m.TestA" {
		t.Errorf("events %d max %d %s", st.Events, st.MaxEvents, st.MaxEventsTest)
	}
	if st.PairsFrom["observed"] != 1 || st.PairsFrom["predicted"] != 1 || len(st.PairsFrom) != 2 {
		t.Errorf("pairs by origin = %v, want observed 1, predicted 1", st.PairsFrom)
	}
	if len(st.PairList) != 2 || st.PairList[1].Pair != "use-before-init: store s.p a.go:3 → use s.p a.go:9" || st.PairList[1].Tests != 1 {
		t.Errorf("pairs = %+v", st.PairList)
	}
	// Later site tables use stable hashed ids, not 1..n: sites are found by
	// their id field.
	hashed := []siteJSON{{ID: 737913968, Kind: "init", File: "/m/s.go", Line: 94, Expr: "g.m"}, {ID: 42, Kind: "use", File: "/m/s.go", Line: 110, Expr: "g.m"}}
	if got := describe(hashed, 42); got != "use g.m s.go:110" {
		t.Errorf("describe(hashed id) = %q", got)
	}
	if got := describe(hashed, 7); got != "site 7" {
		t.Errorf("describe(unknown id) = %q", got)
	}
	if st.Runs != 5 || st.Delays != 4 || st.RunOutcomes["fail"] != 1 || st.RunOutcomes["pass"] != 4 {
		t.Errorf("runs %d delays %d outcomes %v, want 5 4 fail 1 pass 4", st.Runs, st.Delays, st.RunOutcomes)
	}
	// The critical path: TestB's preparation run was the longest; TestA's
	// two detection runs make the longest chain.
	if st.LongestPrepNs != 5e9 || st.LongestPrepTest != "ex.com/m.TestB" || st.LongestChainNs != 7e9 || st.LongestChainTest != "ex.com/m.TestA" {
		t.Errorf("critical path %d %s, %d %s", st.LongestPrepNs, st.LongestPrepTest, st.LongestChainNs, st.LongestChainTest)
	}
	// Only TestA's runs carry their processes' CPU time.
	if st.RunsCPUNs != 75e7 || st.RunsWithCPU != 2 {
		t.Errorf("runs' CPU %d ns over %d runs, want 750000000 over 2", st.RunsCPUNs, st.RunsWithCPU)
	}
	if st.Reports != 1 || len(bugs) != 1 {
		t.Fatalf("reports %d bugs %v", st.Reports, bugs)
	}
	b := bugs[0]
	if b.Kind != "use-before-init" || b.Delayed != "a.go:3 s.p (store) in (*S).Start" || b.Failing != "a.go:9 s.p (use) in (*S).loop" ||
		b.File != filepath.Join("reports", "ex.com", "m", "TestA.json") {
		t.Errorf("bug = %+v", b)
	}

	// A corrupt plan is an error naming the file, not a silent zero.
	if err := os.WriteFile(filepath.Join(dir, "plans/ex.com/m/TestC.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := CollectWork(dir); err == nil || !strings.Contains(err.Error(), "TestC.json") {
		t.Errorf("corrupt plan: err = %v", err)
	}
	// An empty work directory (prepare failed early) is all zeros.
	st, bugs, err = CollectWork(t.TempDir())
	if err != nil || st.Sites != 0 || st.Plans != 0 || bugs != nil {
		t.Errorf("empty work dir: %+v %v %v", st, bugs, err)
	}
}

func TestLoadModules(t *testing.T) {
	mods, err := LoadModules("../scripts/fieldruns/modules.tsv")
	if err != nil {
		t.Fatal(err)
	}
	need := []string{"golang.org/x/sync", "github.com/sourcegraph/conc", "go.uber.org/zap", "github.com/panjf2000/ants/v2",
		"github.com/allegro/bigcache/v3", "github.com/jackc/puddle/v2", "ristretto", "github.com/Workiva/go-datastructures",
		"github.com/gammazero/workerpool", "github.com/alitto/pond"}
	for _, n := range need {
		found := false
		for _, m := range mods {
			if strings.Contains(m.Path, n) && strings.HasPrefix(m.Version, "v") && len(m.Patterns) > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("modules.tsv has no pinned %s", n)
		}
	}
	for _, m := range mods {
		if m.Skip != "" && m.Note == "" {
			t.Errorf("%s skips %q without saying why", m.Name, m.Skip)
		}
	}
	if _, err := LoadModules("../scripts/fieldruns/modules.tsv", "nosuch"); err == nil {
		t.Error("unknown module name accepted")
	}
	bad := filepath.Join(t.TempDir(), "m.tsv")
	os.WriteFile(bad, []byte("x\tex.com/x\tlatest\n"), 0o644)
	if _, err := LoadModules(bad); err == nil || !strings.Contains(err.Error(), "m.tsv:1") {
		t.Errorf("unpinned version: err = %v", err)
	}
	os.WriteFile(bad, []byte("x\tex.com/x\tv1.0.0\t-\t^(TestA$\twhy\n"), 0o644)
	if _, err := LoadModules(bad); err == nil || !strings.Contains(err.Error(), "m.tsv:1: skip") {
		t.Errorf("bad skip regexp: err = %v", err)
	}
	os.WriteFile(bad, []byte("x\tex.com/x\tv1.0.0\t./a/...\t^TestSlow$\tslow\n"), 0o644)
	ms, err := LoadModules(bad)
	if err != nil || len(ms) != 1 || strings.Join(ms[0].TestFlags(), " ") != "--skip ^TestSlow$" ||
		strings.Join(ms[0].GoTestFlags(), " ") != "-skip ^TestSlow$" || ms[0].Note != "slow" || ms[0].Patterns[0] != "./a/..." {
		t.Errorf("skip column: %+v %v", ms, err)
	}
	os.WriteFile(bad, []byte("x\tex.com/x\tv1.0.0\t. -short\t^TestSlow$\tslow\n"), 0o644)
	ms, err = LoadModules(bad)
	if err != nil || len(ms) != 1 || !ms[0].Short || strings.Join(ms[0].Patterns, " ") != "." ||
		strings.Join(ms[0].TestFlags(), " ") != "--short --skip ^TestSlow$" || strings.Join(ms[0].GoTestFlags(), " ") != "-short -skip ^TestSlow$" {
		t.Errorf("-short token: %+v %v", ms, err)
	}
	os.WriteFile(bad, []byte("x\tex.com/x\tv1.0.0\t-race .\t-\n"), 0o644)
	if _, err := LoadModules(bad); err == nil || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("unknown flag in patterns: err = %v", err)
	}
}

func TestMarkdown(t *testing.T) {
	mods := []Module{{Name: "a", Path: "ex.com/a", Version: "v1.0.0"}, {Name: "b", Path: "ex.com/b", Version: "v2.0.0"}}
	s := &Store{Labels: map[string]*LabelRun{}, Baselines: map[string]*Baseline{}}
	for i, name := range []string{"before", "after"} {
		s.AddLabel(&LabelRun{Label: Label{Name: name, Commit: "c" + name}, Date: time.Unix(0, 0), Results: map[string]*Result{
			"a": {Module: "ex.com/a", Version: "v1.0.0", Status: "ok", Built: 2, Packages: 2, TestsRun: 7,
				Stats:    Stats{Sites: 10 * (i + 1), Plans: 7, Candidates: i + 1},
				Problems: []string{"ex.com/a.TestX (detect): failed under delays (output in /tmp/w/x.log)"},
				Bugs:     []BugRef{{Kind: "use-after-dispose", Package: "ex.com/a", Test: "TestY"}}},
		}})
	}
	s.AddLabel(s.Labels["before"]) // re-adding keeps the order
	s.Baselines["a"] = &Baseline{Module: "ex.com/a", Version: "v1.0.0",
		GoTest:  []Timing{{Wall: 2, CPU: 1}, {Wall: 4, CPU: 1}, {Wall: 3, CPU: 1}},
		Prepare: map[string][]Timing{"before": {{Wall: 6, CPU: 3}}, "after": {{Wall: 9, CPU: 3}}}}
	md := Markdown(mods, s, "# title", "## Notes\n\nhand-written")
	for _, want := range []string{
		"Each cell is before / after.",
		"| ex.com/a v1.0.0 | 2 of 2 / 2 of 2 | 7 / 7 | 10 / 20 |",
		"| ex.com/b v2.0.0 | – / – |",
		"BUG REPORT use-after-dispose in ex.com/a.TestY",
		"6.00 (2.00×)", "9.00 (3.00×)",
		"hand-written",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "/tmp/w/x.log") {
		t.Error("log paths of the work directory leak into the document")
	}
	if !strings.Contains(md, "| ex.com/a | 3 | – | 3.00× | 3.00× | 4.50× | 3.00× | +50.0 % | +0.0 % |") {
		t.Errorf("paired table missing:\n%s", md)
	}
	if PairedMedian([]float64{2, 6, 3}, []float64{1, 2, 0}) != 2.5 || PairedMedian(nil, []float64{1}) != 0 {
		t.Error("PairedMedian")
	}
	if Median([]float64{5, 1, 3}) != 3 || Median([]float64{4, 1, 3, 2}) != 2.5 || Median(nil) != 0 {
		t.Error("Median")
	}
}

func TestDropLocalReplaces(t *testing.T) {
	dir := t.TempDir()
	gomod := "module ex.com/m/sdk\n\ngo 1.22\n\nrequire (\n\tex.com/m v1.2.0\n\tex.com/other v0.1.0\n)\n\n" +
		"replace ex.com/m => ../\n\nreplace ex.com/m/metric v1.2.0 => ../metric\n\nreplace ex.com/other => ex.com/fork v0.2.0\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := dropLocalReplaces(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	got := string(data)
	if strings.Contains(got, "../") || !strings.Contains(got, "ex.com/other => ex.com/fork v0.2.0") {
		t.Errorf("go.mod after dropping local replaces:\n%s", got)
	}
}
