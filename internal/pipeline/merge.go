package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memorder/wafl/internal/pipeline/workdir"
	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/plans"
)

// MergeOptions configure Merge.
type MergeOptions struct {
	Common
	Reports
}

// Merge merges the work directories of shards (--shard i/n, each run on
// its own machine) into this invocation's work directory: plans (a test's
// plans from two directories are combined with plans.Merge when they are
// for the same binary), remembered failures, bug reports with their
// reproduction files, and prints all bugs as one report (JSON and SARIF as
// the options ask). Paths inside the copied files that pointed into a
// shard's directory are rewritten to point into the merged one. It
// returns the number of bugs.
func Merge(o MergeOptions, dirs []string) (int, error) {
	ws, err := o.workspace()
	if err != nil {
		return 0, err
	}
	unlock, err := ws.Lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	for _, d := range dirs {
		src, err := filepath.Abs(d)
		if err != nil {
			return 0, err
		}
		if src == ws.Work {
			return 0, fmt.Errorf("%s: is the work directory merged into", d)
		}
		_, e1 := os.Stat(filepath.Join(src, "plans"))
		_, e2 := os.Stat(filepath.Join(src, "reports"))
		if e1 != nil && e2 != nil {
			return 0, fmt.Errorf("%s: not a wafl work directory (no plans/ or reports/)", d)
		}
		m := merger{ws: ws, src: src, stderr: o.Stderr}
		if err := m.plans(); err != nil {
			return 0, err
		}
		if err := m.reports(); err != nil {
			return 0, err
		}
	}
	var bugs []*report.Bug
	err = filepath.WalkDir(ws.ReportDir(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() || !isReportFile(path) {
			return nil
		}
		r, err := report.ReadJSON(path)
		if err != nil {
			return err
		}
		bugs = append(bugs, r.Bugs...)
		return nil
	})
	if err != nil {
		return 0, err
	}
	sort.SliceStable(bugs, func(i, k int) bool {
		if bugs[i].Package != bugs[k].Package {
			return bugs[i].Package < bugs[k].Package
		}
		return bugs[i].Test < bugs[k].Test
	})
	fmt.Fprintf(o.Stderr, "merged %d work directories into %s: %s\n", len(dirs), ws.Work, plural(len(bugs), "bug", "bugs"))
	return len(bugs), printReports(&o.Common, o.Reports, ws.Root, bugs)
}

// isReportFile tells a test's report (<Test>.json) from the reproduction
// files beside it.
func isReportFile(path string) bool {
	return strings.HasSuffix(path, ".json") && !strings.HasSuffix(path, ".plan.json") && !strings.HasSuffix(path, ".sites.json")
}

type merger struct {
	ws     *workdir.Dir
	src    string
	stderr interface{ Write([]byte) (int, error) }
}

// moved rewrites a path into the shard's directory to the merged one.
func (m *merger) moved(p string) string {
	if r, ok := strings.CutPrefix(p, m.src+string(filepath.Separator)); ok {
		return filepath.Join(m.ws.Work, r)
	}
	return p
}

func (m *merger) walk(sub string, fn func(rel string) error) error {
	root := filepath.Join(m.src, sub)
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(m.src, path)
		if err != nil {
			return err
		}
		return fn(rel)
	})
}

func (m *merger) plans() error {
	return m.walk("plans", func(rel string) error {
		src, dst := filepath.Join(m.src, rel), filepath.Join(m.ws.Work, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".fails.json") {
			return copyFile(src, dst)
		}
		if !strings.HasSuffix(rel, ".json") {
			return nil
		}
		b, err := plans.Load(src)
		if err != nil {
			return err
		}
		b.MovePaths(m.moved)
		a, err := plans.Load(dst)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return plans.Save(dst, b)
		case err != nil:
			return err
		}
		da, _ := a.Marshal()
		db, _ := b.Marshal()
		if bytes.Equal(da, db) {
			return nil // merged before
		}
		if a.Provenance.BinaryHash != b.Provenance.BinaryHash {
			fmt.Fprintf(m.stderr, "wafl: %s: the plans in %s and %s are for different builds of %s; keeping %s's\n",
				rel, m.src, m.ws.Work, a.Provenance.Package, m.ws.Work)
			return nil
		}
		c, err := plans.Merge(a, b)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return plans.Save(dst, c)
	})
}

func (m *merger) reports() error {
	return m.walk("reports", func(rel string) error {
		src, dst := filepath.Join(m.src, rel), filepath.Join(m.ws.Work, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".plan.json") || strings.HasSuffix(rel, ".sites.json") {
			return copyFile(src, dst)
		}
		if !isReportFile(rel) {
			return nil // the .txt beside a report is rewritten with it
		}
		r, err := report.ReadJSON(src)
		if err != nil {
			return err
		}
		for _, b := range r.Bugs {
			rp := &b.Reproduce
			rp.Plan, rp.Sites = m.moved(rp.Plan), m.moved(rp.Sites)
			for i, e := range rp.Env {
				if k, v, ok := strings.Cut(e, "="); ok {
					rp.Env[i] = k + "=" + m.moved(v)
				}
			}
			if len(rp.Command) > 0 {
				rp.Command[0] = m.moved(rp.Command[0])
			}
		}
		bugs := r.Bugs
		if old, err := report.ReadJSON(dst); err == nil {
			bugs = old.Bugs
			for _, b := range r.Bugs {
				dup := false
				for _, o := range old.Bugs {
					if o.Kind == b.Kind && o.Delayed.Site == b.Delayed.Site && o.Failing.Site == b.Failing.Site {
						dup = true
						break
					}
				}
				if !dup {
					bugs = append(bugs, b)
				}
			}
		}
		var js, txt bytes.Buffer
		if err := report.WriteJSON(&js, bugs); err != nil {
			return err
		}
		if err := report.WriteText(&txt, bugs, true); err != nil {
			return err
		}
		if err := os.WriteFile(dst, js.Bytes(), 0o644); err != nil {
			return err
		}
		return os.WriteFile(strings.TrimSuffix(dst, ".json")+".txt", txt.Bytes(), 0o644)
	})
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
