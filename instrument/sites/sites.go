// Package sites defines the site table: the list of MEMORDER sites of one
// instrumented test binary, written next to the binary by the instrumenter
// and read by the analyzer and the reports. Runtime events carry only the
// site id; everything a person reads comes from this table.
package sites

import (
	"encoding/json"
	"fmt"
	"os"
)

// Version is the site table format version.
const Version = 1

// Table is the site table of one package's test binary. Site ids are dense:
// Sites[i].ID == i+1; id 0 means "no site".
type Table struct {
	Version int    `json:"version"`
	Package string `json:"package"` // import path of the package under test
	Sites   []Site `json:"sites"`
}

// Site is one instrumented location.
type Site struct {
	ID uint32 `json:"id"`
	// Kind is the syntactic kind: "store" (init or dispose by value),
	// "use", "close", "send", "atomic-store", "atomic-load", ...
	Kind string `json:"kind"`
	File string `json:"file"` // absolute path of the user's original file
	Line int    `json:"line"`
	Col  int    `json:"col"`
	Expr string `json:"expr"` // the slot expression as source text
	Func string `json:"func"` // enclosing function, e.g. "(*Server).Close"
	// Guard is the Lock/RLock call that guards the site when the site is
	// inside a critical section its goroutine entered earlier in the same
	// function (or in the caller of a helper): a delay at the site is
	// injected before that call (hoisting, docs/algorithm.md).
	Guard *Guard `json:"guard,omitempty"`
}

// Guard is a lock acquisition a site's delay is hoisted before.
type Guard struct {
	Call string `json:"call"` // source text, e.g. "s.mu.Lock()"
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// Lookup returns the site with the given id.
func (t *Table) Lookup(id uint32) (Site, bool) {
	if id == 0 || int(id) > len(t.Sites) {
		return Site{}, false
	}
	return t.Sites[id-1], true
}

// Load reads a site table.
func Load(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t Table
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("site table %s: %w", path, err)
	}
	if t.Version != Version {
		return nil, fmt.Errorf("site table %s: version %d, want %d", path, t.Version, Version)
	}
	for i, s := range t.Sites {
		if s.ID != uint32(i+1) {
			return nil, fmt.Errorf("site table %s: site %d has id %d, want dense ids from 1", path, i, s.ID)
		}
	}
	return &t, nil
}

// Save writes the site table as indented JSON.
func (t *Table) Save(path string) error {
	t.Version = Version
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
