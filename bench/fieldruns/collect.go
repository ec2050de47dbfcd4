package fieldruns

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Summary is what the summary wafl prints at the end of prepare and detect
// says (internal/pipeline Summary.Print). Only what no file in the work
// directory records is taken from it.
type Summary struct {
	Found          bool // a "packages:" line was seen
	Packages       int
	Built          int
	TestsRun       int
	Prepared       int
	WithCandidates int
	Runs           int
	Delays         int
	Bugs           int
	Problems       []string
}

var (
	rePackages = regexp.MustCompile(`(?m)^packages:\s+(\d+) matched, (\d+) built`)
	// "29 run, 27 prepared, 5 with ..." (wafl up to 8843844) or
	// "29: 27 prepared now, 0 with a current plan; 5 with ..." (later).
	reTests    = regexp.MustCompile(`(?m)^tests:\s+(\d+)(?: run, | \(shard [^)]*\): |: )(\d+) prepared(?: now)?[^\n]*?(\d+) with delay candidates`)
	reDetect   = regexp.MustCompile(`(?m)^detect:\s+(\d+) runs?, (\d+) delays? injected, (\d+) bugs? found`)
	reProblems = regexp.MustCompile(`(?m)^skipped or failed: (\d+)$`)
)

// ParseSummary reads the last summary in a wafl output.
func ParseSummary(out string) Summary {
	var s Summary
	atoi := func(b string) int { n, _ := strconv.Atoi(b); return n }
	last := func(re *regexp.Regexp) []string {
		all := re.FindAllStringSubmatch(out, -1)
		if len(all) == 0 {
			return nil
		}
		return all[len(all)-1]
	}
	if m := last(rePackages); m != nil {
		s.Found = true
		s.Packages, s.Built = atoi(m[1]), atoi(m[2])
	}
	if m := last(reTests); m != nil {
		s.TestsRun, s.Prepared, s.WithCandidates = atoi(m[1]), atoi(m[2]), atoi(m[3])
	}
	if m := last(reDetect); m != nil {
		s.Runs, s.Delays, s.Bugs = atoi(m[1]), atoi(m[2]), atoi(m[3])
	}
	locs := reProblems.FindAllStringIndex(out, -1)
	if len(locs) > 0 {
		// Problem lines start with two spaces; continuation lines of a
		// multi-line reason with four.
		rest := out[locs[len(locs)-1][1]:]
		for _, line := range strings.Split(rest, "\n")[1:] {
			switch {
			case strings.HasPrefix(line, "    ") && len(s.Problems) > 0:
				s.Problems[len(s.Problems)-1] += "\n" + strings.TrimSpace(line)
			case strings.HasPrefix(line, "  "):
				s.Problems = append(s.Problems, strings.TrimSpace(line))
			default:
				return s
			}
		}
	}
	return s
}

// ProblemPhase returns the phase of a problem line "pkg.Test (phase): reason".
func ProblemPhase(p string) string {
	first, _, _ := strings.Cut(p, "\n")
	i := strings.Index(first, " (")
	if i < 0 {
		return ""
	}
	rest := first[i+2:]
	j := strings.Index(rest, "):")
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// siteJSON is the part of a site table entry (instrument/sites) read here.
type siteJSON struct {
	ID   uint32 `json:"id"`
	Kind string `json:"kind"`
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
	Expr string `json:"expr"`
}

// planJSON is the part of a plan (docs/plan-format.md) read here.
type planJSON struct {
	Provenance struct {
		Package    string `json:"package"`
		Test       string `json:"test"`
		Events     int64  `json:"events"`
		Sites      string `json:"sites"`
		DurationNs int64  `json:"duration_ns"`
	} `json:"provenance"`
	Locations []struct {
		Site  uint32 `json:"site"`
		Pairs []struct {
			Kind   string `json:"kind"`
			First  uint32 `json:"first"`
			Second uint32 `json:"second"`
			From   string `json:"from"`
		} `json:"pairs"`
		Delays int `json:"delays"`
	} `json:"locations"`
	Runs []struct {
		Delays     int    `json:"delays"`
		Outcome    string `json:"outcome"`
		DurationNs int64  `json:"duration_ns"`
		CPUNs      int64  `json:"cpu_ns"`
		Beside     int    `json:"beside"`
	} `json:"runs"`
}

// CollectWork reads a wafl work directory: the site tables under bin/, the
// plans under plans/ and the report files under reports/. Site tables may
// each hold the sites of every package built together, so sites are counted
// once per distinct (file, line, col, kind, expr).
func CollectWork(dir string) (Stats, []BugRef, error) {
	st := Stats{SitesByKind: map[string]int{}, RunOutcomes: map[string]int{}, PairsFrom: map[string]int{}}
	seen := map[siteJSON]bool{}
	pairs := map[string]*PairSummary{}
	err := walkFiles(filepath.Join(dir, "bin"), ".sites.json", func(path string, data []byte) error {
		var t struct {
			Sites []siteJSON `json:"sites"`
		}
		if err := json.Unmarshal(data, &t); err != nil {
			return fmt.Errorf("site table %s: %w", path, err)
		}
		for _, s := range t.Sites {
			s.ID = 0
			if !seen[s] {
				seen[s] = true
				st.Sites++
				st.SitesByKind[s.Kind]++
			}
		}
		return nil
	})
	if err != nil {
		return st, nil, err
	}
	err = walkFiles(filepath.Join(dir, "plans"), ".json", func(path string, data []byte) error {
		var p planJSON
		if err := json.Unmarshal(data, &p); err != nil {
			return fmt.Errorf("plan %s: %w", path, err)
		}
		st.Plans++
		if len(p.Locations) > 0 {
			st.Candidates++
		}
		st.Locations += len(p.Locations)
		var table []siteJSON
		if len(p.Locations) > 0 && p.Provenance.Sites != "" {
			table = loadSites(dir, p.Provenance.Sites)
		}
		for _, l := range p.Locations {
			st.Pairs += len(l.Pairs)
			for _, pr := range l.Pairs {
				from := pr.From
				if from == "" {
					from = "observed"
				}
				st.PairsFrom[from]++
				key := pr.Kind + ": " + describe(table, pr.First) + " → " + describe(table, pr.Second)
				if pairs[key] == nil {
					pairs[key] = &PairSummary{Pair: key}
				}
				pairs[key].Tests++
				pairs[key].Delays += l.Delays
			}
		}
		st.Events += p.Provenance.Events
		if p.Provenance.Events > st.MaxEvents {
			st.MaxEvents = p.Provenance.Events
			st.MaxEventsTest = p.Provenance.Package + "." + p.Provenance.Test
		}
		name := p.Provenance.Package + "." + p.Provenance.Test
		if d := p.Provenance.DurationNs; d > st.LongestPrepNs {
			st.LongestPrepNs, st.LongestPrepTest = d, name
		}
		var chain int64
		for i := 0; i < len(p.Runs); {
			// Runs side by side count once, as the longest of them.
			n := max(p.Runs[i].Beside, 1)
			var longest int64
			for _, r := range p.Runs[i:min(i+n, len(p.Runs))] {
				st.Runs++
				st.Delays += r.Delays
				st.RunOutcomes[r.Outcome]++
				longest = max(longest, r.DurationNs)
				if r.CPUNs > 0 {
					st.RunsCPUNs += r.CPUNs
					st.RunsWithCPU++
				}
			}
			chain += longest
			i += n
		}
		if chain > st.LongestChainNs {
			st.LongestChainNs, st.LongestChainTest = chain, name
		}
		return nil
	})
	if err != nil {
		return st, nil, err
	}
	for _, ps := range pairs {
		st.PairList = append(st.PairList, *ps)
	}
	sort.Slice(st.PairList, func(i, j int) bool {
		a, b := st.PairList[i], st.PairList[j]
		if a.Delays != b.Delays {
			return a.Delays > b.Delays
		}
		return a.Pair < b.Pair
	})
	var bugs []BugRef
	err = walkFiles(filepath.Join(dir, "reports"), ".json", func(path string, data []byte) error {
		bs, err := ParseReports(data)
		if err != nil {
			return fmt.Errorf("report %s: %w", path, err)
		}
		rel, _ := filepath.Rel(dir, path)
		for i := range bs {
			bs[i].File = rel
		}
		st.Reports++
		bugs = append(bugs, bs...)
		return nil
	})
	return st, bugs, err
}

// loadSites reads the site table a plan names (by its path, or, when the
// work directory was moved, by the same path relative to bin/).
func loadSites(dir, path string) []siteJSON {
	data, err := os.ReadFile(path)
	if err != nil {
		if i := strings.LastIndex(path, string(filepath.Separator)+"bin"+string(filepath.Separator)); i >= 0 {
			data, err = os.ReadFile(filepath.Join(dir, path[i+1:]))
		}
	}
	if err != nil {
		return nil
	}
	var t struct {
		Sites []siteJSON `json:"sites"`
	}
	if json.Unmarshal(data, &t) != nil {
		return nil
	}
	return t.Sites
}

// describe names a site for people: "kind expr file:line". Sites are found
// by their id field: wafl up to 8843844 numbered them 1..n in table order,
// later versions use stable hashed ids (so the position is tried last).
func describe(table []siteJSON, id uint32) string {
	for _, s := range table {
		if s.ID == id {
			return fmt.Sprintf("%s %s %s:%d", s.Kind, s.Expr, filepath.Base(s.File), s.Line)
		}
	}
	if id == 0 || int(id) > len(table) {
		return fmt.Sprintf("site %d", id)
	}
	s := table[id-1]
	return fmt.Sprintf("%s %s %s:%d", s.Kind, s.Expr, filepath.Base(s.File), s.Line)
}

// walkFiles calls fn for every file under root whose name ends in suffix, in
// lexical order; a missing root is no error.
func walkFiles(root, suffix string, fn func(path string, data []byte) error) error {
	var paths []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), suffix) {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := fn(p, data); err != nil {
			return err
		}
	}
	return nil
}

type locJSON struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Op   string `json:"op"`
	Expr string `json:"expr"`
	Func string `json:"func"`
}

func (l *locJSON) String() string {
	if l == nil {
		return ""
	}
	s := fmt.Sprintf("%s:%d", filepath.Base(l.File), l.Line)
	if l.Expr != "" {
		s += " " + l.Expr
	}
	if l.Op != "" {
		s += " (" + l.Op + ")"
	}
	if l.Func != "" {
		s += " in " + l.Func
	}
	return s
}

// ParseReports reads a report file or `detect --json` output: either one bug
// object or {"bugs":[...]} (docs/report-format.md).
func ParseReports(data []byte) ([]BugRef, error) {
	type bugJSON struct {
		Kind    string   `json:"kind"`
		Panic   string   `json:"panic"`
		Package string   `json:"package"`
		Test    string   `json:"test"`
		Delayed locJSON  `json:"delayed"`
		Failing locJSON  `json:"failing"`
		Partner *locJSON `json:"partner"`
	}
	var doc struct {
		Bugs []bugJSON `json:"bugs"`
		bugJSON
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	list := doc.Bugs
	if list == nil && doc.Kind != "" {
		list = []bugJSON{doc.bugJSON}
	}
	var out []BugRef
	for _, b := range list {
		out = append(out, BugRef{
			Package: b.Package, Test: b.Test, Kind: b.Kind, Panic: b.Panic,
			Delayed: b.Delayed.String(), Failing: b.Failing.String(), Partner: b.Partner.String(),
		})
	}
	return out, nil
}
