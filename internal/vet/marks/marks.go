// Package marks tells, for each hint of wafl vet, what wafl's test runs in
// a work directory showed about it:
//
//   - confirmed: a bug report (.wafl/reports/**/*.json) names two of the
//     hint's positions (its two accesses, where it is reported, what it
//     relates) among its delayed, failing and partner sites — a detection
//     run crashed there;
//   - exercised: both accesses are sites a preparation run recorded (in a
//     trace) or paired (in a plan) — tests reach both sides, and the
//     delays there exposed nothing;
//   - untested: a test reaches at most one side: a test to write.
//
// Sites match by file and line. It lives apart from package vet, whose
// analyzer imports only the standard library and golang.org/x/tools.
package marks

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/internal/vet"
)

// The marks.
const (
	Confirmed = "confirmed"
	Exercised = "exercised"
	Untested  = "untested"
)

// maxTrace is the largest trace read for its sites; plans still count for
// larger ones.
const maxTrace = 64 << 20

// WorkDir returns the work directory marks come from: dir when set, else
// .wafl at the module root above start, or "" when there is none.
func WorkDir(dir, start string) string {
	if dir != "" {
		return dir
	}
	if start == "" {
		start = "."
	}
	abs, err := filepath.Abs(start)
	if err != nil {
		return ""
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			w := filepath.Join(d, ".wafl")
			if st, err := os.Stat(w); err == nil && st.IsDir() {
				return w
			}
			return ""
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

type line struct {
	file string
	line int
}

// Index is what a work directory shows.
type Index struct {
	reports []report
	sites   map[line]bool // recorded or paired sites
}

type report struct {
	path  string
	sites map[line]bool
}

// Load reads the reports, plans and traces of a work directory.
func Load(dir string) (*Index, error) {
	ix := &Index{sites: map[line]bool{}}
	tables := map[string]map[uint32]line{}
	table := func(path string) map[uint32]line {
		if t, ok := tables[path]; ok {
			return t
		}
		t := readSites(path)
		tables[path] = t
		return t
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable part of the directory marks nothing
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		top := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		name := d.Name()
		switch {
		case top == "reports" && strings.HasSuffix(name, ".json") &&
			!strings.HasSuffix(name, ".plan.json") && !strings.HasSuffix(name, ".sites.json"):
			ix.addReport(path)
		case top == "plans" && strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, ".fails.json"):
			ix.addPlan(path, table)
		case top == "traces" && strings.HasSuffix(name, ".arrows"):
			if info, err := d.Info(); err == nil && info.Size() <= maxTrace {
				ix.addTrace(path, table)
			}
		}
		return nil
	})
	return ix, err
}

type siteJSON struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	CrashFile string `json:"crash_file"`
	CrashLine int    `json:"crash_line"`
}

func (ix *Index) addReport(path string) {
	var r struct {
		Bugs []struct {
			Delayed *siteJSON `json:"delayed"`
			Failing *siteJSON `json:"failing"`
			Partner *siteJSON `json:"partner"`
		} `json:"bugs"`
	}
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &r) != nil {
		return
	}
	for _, b := range r.Bugs {
		rep := report{path: path, sites: map[line]bool{}}
		for _, s := range []*siteJSON{b.Delayed, b.Failing, b.Partner} {
			if s == nil {
				continue
			}
			rep.sites[line{s.File, s.Line}] = true
			if s.CrashFile != "" {
				rep.sites[line{s.CrashFile, s.CrashLine}] = true
			}
		}
		ix.reports = append(ix.reports, rep)
	}
}

func (ix *Index) addPlan(path string, table func(string) map[uint32]line) {
	var p struct {
		Provenance struct {
			Sites string `json:"sites"`
		} `json:"provenance"`
		Locations []struct {
			Pairs []struct {
				First  uint32 `json:"first"`
				Second uint32 `json:"second"`
			} `json:"pairs"`
		} `json:"locations"`
	}
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &p) != nil || p.Provenance.Sites == "" {
		return
	}
	t := table(p.Provenance.Sites)
	for _, l := range p.Locations {
		for _, pr := range l.Pairs {
			for _, id := range []uint32{pr.First, pr.Second} {
				if s, ok := t[id]; ok {
					ix.sites[s] = true
				}
			}
		}
	}
}

func (ix *Index) addTrace(path string, table func(string) map[uint32]line) {
	r, err := trace.Open(path)
	if err != nil {
		return
	}
	defer r.Close()
	t := table(r.Meta().Sites)
	seen := map[uint32]bool{}
	for r.Next() {
		for _, id := range r.Batch().Site {
			if !seen[id] {
				seen[id] = true
				if s, ok := t[id]; ok {
					ix.sites[s] = true
				}
			}
		}
	}
}

func readSites(path string) map[uint32]line {
	var st struct {
		Sites []struct {
			ID   uint32 `json:"id"`
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"sites"`
	}
	out := map[uint32]line{}
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &st) != nil {
		return out
	}
	for _, s := range st.Sites {
		out[s.ID] = line{s.File, s.Line}
	}
	return out
}

// Mark sets each hint's mark (and the report that confirms it).
func (ix *Index) Mark(hints []vet.Found) {
	for i := range hints {
		h := &hints[i]
		if len(h.Pair) != 2 {
			continue
		}
		a := line{h.Pair[0].Abs, h.Pair[0].Line}
		b := line{h.Pair[1].Abs, h.Pair[1].Line}
		// Confirmed: two of the hint's positions (its pair, where it is
		// reported, what it relates) are sites of one bug report.
		positions := map[line]bool{a: true, b: true, {h.Abs, h.Line}: true}
		for _, r := range h.Related {
			positions[line{r.Abs, r.Line}] = true
		}
		h.Mark = Untested
		for _, r := range ix.reports {
			n := 0
			for p := range positions {
				if r.sites[p] {
					n++
				}
			}
			if n >= 2 {
				h.Mark = Confirmed
				h.Report = r.path
				break
			}
		}
		if h.Mark == Untested && ix.sites[a] && ix.sites[b] {
			h.Mark = Exercised
		}
	}
}
