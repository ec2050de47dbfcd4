// Package reach is what the instrumented code may reach from a test or a
// go statement, computed statically: the call graph of the instrumented
// packages' functions (SSA, golang.org/x/tools/go/ssa, with class
// hierarchy analysis for interface calls), bounded in depth, with the
// instrumented sites of each function. The build writes one reach file
// per test binary beside its site table (PathFor); the analyzer asks it
// which sites a test, or the goroutine of a go statement, may reach and
// at what call distance (File.Test, File.Go).
//
// A static answer is an over-approximation within the depth bound (a
// function value created or handed over counts as called where it is
// created; an interface call reaches every instrumented implementation)
// and misses what flows through uninstrumented code beyond the callbacks
// handed to it. The analyzer uses it only to choose where delays may go
// and to scope its guesses to code a test can run; a delay never makes a
// report by itself (docs/algorithm.md, "Beyond the observed schedule").
package reach

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Version is the reach file's format version.
const Version = 1

// DefaultDepth is the number of calls followed from a root.
const DefaultDepth = 6

// File is the reach file of one test binary: the instrumented functions a
// test of the package, or a goroutine those tests may start, reaches
// within Depth calls, each with its own sites and its callees; the roots
// are the package's top-level Test functions and the go statements found
// on the way.
type File struct {
	Version int    `json:"version"`
	Package string `json:"package"` // import path of the package under test
	// Depth is the number of calls a query follows from a root; the
	// graph holds every function within Depth calls of some root.
	Depth int    `json:"depth"`
	Funcs []Func `json:"funcs"`
	// Tests maps a top-level Test function's name to its function(s)
	// (one, unless the internal and external test packages both declare
	// it).
	Tests map[string][]int `json:"tests"`
	// Gos maps a go statement's site id (decimal) to the functions its
	// goroutine starts in (several for a call through an interface).
	Gos map[string][]int `json:"gos,omitempty"`
	// Truncated says the cost bound stopped the graph short: some
	// functions within Depth are missing.
	Truncated bool `json:"truncated,omitempty"`
}

// Func is one function of the graph.
type Func struct {
	Name  string   `json:"name"`            // e.g. "(*m.Server).serve", "m.TestX$1"
	Sites []uint32 `json:"sites,omitempty"` // instrumented sites in its body (not in nested function literals)
	Calls []int    `json:"calls,omitempty"` // functions it calls, defers, creates or hands over
	// Starts are the functions its go statements start: a test reaches
	// them, the goroutine itself does not (its children do).
	Starts []int `json:"starts,omitempty"`
}

// PathFor is the reach file beside the site table at sitesPath
// (bin/<pkg>.sites.json -> bin/<pkg>.reach.json).
func PathFor(sitesPath string) string {
	return strings.TrimSuffix(sitesPath, ".sites.json") + ".reach.json"
}

// Load reads a reach file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("reach file %s: %w", path, err)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("reach file %s: version %d, want %d", path, f.Version, Version)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("reach file %s: %w", path, err)
	}
	return &f, nil
}

// check validates the function indices.
func (f *File) check() error {
	bad := func(i int) bool { return i < 0 || i >= len(f.Funcs) }
	for i, fn := range f.Funcs {
		for _, c := range slices.Concat(fn.Calls, fn.Starts) {
			if bad(c) {
				return fmt.Errorf("function %d calls %d of %d", i, c, len(f.Funcs))
			}
		}
	}
	for _, m := range []map[string][]int{f.Tests, f.Gos} {
		for k, roots := range m {
			for _, r := range roots {
				if bad(r) {
					return fmt.Errorf("root %s names function %d of %d", k, r, len(f.Funcs))
				}
			}
		}
	}
	return nil
}

// Save writes the reach file (compact JSON: it can be large).
func (f *File) Save(path string) error {
	f.Version = Version
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Test returns the sites the top-level test name may reach, in its own
// goroutine or in goroutines it starts, each with its call distance from
// the test function (a go statement counts as a call; 0: in its body);
// nil when the file does not know the test.
func (f *File) Test(name string) map[uint32]int {
	if f == nil || len(f.Tests[name]) == 0 {
		return nil
	}
	return f.reach(f.Tests[name], true)
}

// Go returns the sites the goroutine of the go statement at site may
// reach itself (not in the goroutines it starts), each with its call
// distance from the function the goroutine starts in (0: in its body);
// nil when the file does not know the go statement.
func (f *File) Go(site uint32) map[uint32]int {
	if f == nil {
		return nil
	}
	roots := f.Gos[strconv.FormatUint(uint64(site), 10)]
	if len(roots) == 0 {
		return nil
	}
	return f.reach(roots, false)
}

// reach is a breadth-first walk from roots, at most Depth calls deep,
// into started goroutines too when starts is set.
func (f *File) reach(roots []int, starts bool) map[uint32]int {
	dist := make([]int, len(f.Funcs))
	for i := range dist {
		dist[i] = -1
	}
	out := map[uint32]int{}
	var q []int
	for _, r := range roots {
		if dist[r] < 0 {
			dist[r] = 0
			q = append(q, r)
		}
	}
	for len(q) > 0 {
		i := q[0]
		q = q[1:]
		d := dist[i]
		for _, s := range f.Funcs[i].Sites {
			if old, ok := out[s]; !ok || d < old {
				out[s] = d
			}
		}
		if d >= f.Depth {
			continue
		}
		next := f.Funcs[i].Calls
		if starts {
			next = slices.Concat(next, f.Funcs[i].Starts)
		}
		for _, c := range next {
			if dist[c] < 0 {
				dist[c] = d + 1
				q = append(q, c)
			}
		}
	}
	return out
}
