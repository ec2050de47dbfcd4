// Package fieldbench is the field benchmark: real MEMORDER bugs in
// real public module versions, fetched through the Go module proxy, each shown
// by the project's own test or by the fix's regression test applied to the
// buggy version as a patch to test files only.
//
// A bug is described by a manifest, bench/scripts/field/NAME.field, one "key: value"
// per line (# starts a comment line; a key may repeat, its values are joined
// with spaces):
//
//	project:   alitto/pond
//	module:    github.com/alitto/pond/v2
//	version:   v2.1.4                  (the last version before the fix)
//	package:   ./internal/dispatcher   (relative to the module root)
//	test:      TestDispatcherWriteAfterCloseConcurrent
//	run:       ^Test$/^StreamWorkers_RPCsAndStop$ (optional -run pattern, for a subtest; default ^TEST$)
//	patch:     ponddispatch.patch      (optional; test files only, -p1, beside the manifest)
//	panic:     send on closed channel  (the panic the bug produces; alternatives separated by " | "
//	                                    when one race ends in either of two panics)
//	issue:     https://...             (upstream issue or PR)
//	fix:       https://.../commit/...  (the fix commit; "none" for a bug not fixed upstream,
//	                                    with issue: linking the report or the buggy line)
//	fixed-in:  v2.1.5                  ("none" when fix is none)
//	test-from: where the test comes from (the project's own test, the fix's regression test, ...)
//	summary:   one line: what races with what
//	class:     off-path | map-entry | late-goroutine (optional: where the racing access lies)
//	exposable: yes | no: why not (needs a fault, fails deterministically, ...)
//	diagnosis: why wafl misses it, when it does (site, pair, what the delay did)
//	timeout:   per test run (default 2m)
//
// The driver (cmd/fieldbench, `make field`) measures per bug: plain runs,
// the race detector, and wafl exposure over independent tries.
package fieldbench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Manifest is one field bug.
type Manifest struct {
	Name     string // file name without .field
	Dir      string // directory of the manifest (patch files are relative to it)
	Project  string
	Module   string
	Version  string
	Package  string
	Test     string
	Run      string // -run pattern when the test is a subtest (default ^TEST$)
	Patch    string
	Panic    string
	Issue    string
	Fix      string
	FixedIn  string
	TestFrom string
	Summary  string
	Class    string // off-path, map-entry or late-goroutine, optional
	// Instrument are --instrument patterns (space-separated): dependency
	// packages that hold one side of the race, optional.
	Instrument string
	Exposable  string
	Diagnosis  string
	Timeout    time.Duration
}

// ModVersion is MODULE@VERSION.
func (m *Manifest) ModVersion() string { return m.Module + "@" + m.Version }

// RunPattern is the -run pattern selecting exactly the manifest's test: the
// manifest's run pattern when it has one (a subtest, such as grpc-go's
// Test/Method suites), else ^TEST$.
func (m *Manifest) RunPattern() string {
	if m.Run != "" {
		return m.Run
	}
	return "^" + m.Test + "$"
}

// PanicIn reports whether text holds the manifest's panic, or one of its
// alternatives when the panic key lists several separated by " | ".
func (m *Manifest) PanicIn(text string) bool {
	for _, p := range strings.Split(m.Panic, " | ") {
		if p = strings.TrimSpace(p); p != "" && strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// Unfixed reports whether the bug has no upstream fix (fix: none).
func (m *Manifest) Unfixed() bool { return strings.EqualFold(strings.TrimSpace(m.Fix), "none") }

// NotExposable reports whether the manifest says the bug cannot be exposed
// by delays alone, and why.
func (m *Manifest) NotExposable() (bool, string) {
	e := strings.TrimSpace(m.Exposable)
	if strings.HasPrefix(strings.ToLower(e), "no") {
		return true, strings.TrimSpace(strings.TrimLeft(e[2:], ":—- "))
	}
	return false, ""
}

// ParseManifest reads one manifest file.
func ParseManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := &Manifest{
		Name:    strings.TrimSuffix(filepath.Base(path), ".field"),
		Dir:     filepath.Dir(path),
		Timeout: 2 * time.Minute,
	}
	fields := map[string]*string{
		"project": &m.Project, "module": &m.Module, "version": &m.Version,
		"package": &m.Package, "test": &m.Test, "run": &m.Run, "patch": &m.Patch, "panic": &m.Panic,
		"issue": &m.Issue, "fix": &m.Fix, "fixed-in": &m.FixedIn, "test-from": &m.TestFrom,
		"summary": &m.Summary, "class": &m.Class, "instrument": &m.Instrument, "exposable": &m.Exposable, "diagnosis": &m.Diagnosis,
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want \"key: value\"", path, n)
		}
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		if key == "timeout" {
			d, err := time.ParseDuration(val)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			m.Timeout = d
			continue
		}
		p, ok := fields[key]
		if !ok {
			return nil, fmt.Errorf("%s:%d: unknown key %q", path, n, key)
		}
		if *p != "" {
			*p += " "
		}
		*p += val
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for key, v := range map[string]string{"project": m.Project, "module": m.Module, "version": m.Version,
		"package": m.Package, "test": m.Test, "panic": m.Panic, "fix": m.Fix} {
		if v == "" {
			return nil, fmt.Errorf("%s: %s is missing", path, key)
		}
	}
	if !strings.HasPrefix(m.Package, ".") {
		return nil, fmt.Errorf("%s: package must be relative to the module root (./...)", path)
	}
	return m, nil
}

// LoadManifests reads every *.field file in dir, sorted by name. With names,
// only those (an unknown name is an error).
func LoadManifests(dir string, names ...string) ([]*Manifest, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.field"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var all []*Manifest
	byName := map[string]*Manifest{}
	for _, p := range paths {
		m, err := ParseManifest(p)
		if err != nil {
			return nil, err
		}
		all = append(all, m)
		byName[m.Name] = m
	}
	if len(names) == 0 {
		return all, nil
	}
	var sel []*Manifest
	for _, n := range names {
		m, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("no manifest %s/%s.field", dir, n)
		}
		sel = append(sel, m)
	}
	return sel, nil
}
