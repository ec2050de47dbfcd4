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

// Table is the site table of one package's test binary. Site ids are
// sparse (sites.ID: a hash of package, position and kind, at most MaxID),
// unique within a table; id 0 means "no site".
type Table struct {
	Version int    `json:"version"`
	Package string `json:"package"` // import path of the package under test
	Sites   []Site `json:"sites"`

	index map[uint32]int // id -> index in Sites; built by Load and Index
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
	// Type is the static type of the slot (of the channel, without its
	// direction, for send and close; of the WaitGroup or atomic, without
	// a pointer), with full package paths, or empty when a type parameter,
	// alias or unsafe.Pointer makes it ambiguous. The analyzer drops a
	// pair of two sites whose types differ: their objects only shared an
	// address (analyze/slottypes.go).
	Type string `json:"type,omitempty"`
	// Derefs are, for a load (kind "load", or an "atomic-load" into a
	// local), the lines where the loaded value is dereferenced, or handed
	// to the call or copy that leads there: a crash on one of them is a
	// crash at this site.
	Derefs []Ref `json:"derefs,omitempty"`
	// Guard is the Lock/RLock call that guards the site when the site is
	// inside a critical section its goroutine entered earlier in the same
	// function (or in the caller of a helper): a delay at the site is
	// injected before that call (hoisting, docs/algorithm.md).
	Guard *Guard `json:"guard,omitempty"`
	// Held is, for a check (kind "check") whose delay is not hoisted, the
	// Lock/RLock call of the critical section it is made in, found as
	// Guard is: its delay, after the check, is taken with the lock held,
	// so another check under the same lock cannot come in between.
	Held *Guard `json:"held,omitempty"`
}

// Guard is a lock acquisition a site's delay is hoisted before.
type Guard struct {
	Call string `json:"call"` // source text, e.g. "s.mu.Lock()"
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// Ref is a line of a source file.
type Ref struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// Lookup returns the site with the given id. Without an index (a table
// built in code and not passed to Index) it searches.
func (t *Table) Lookup(id uint32) (Site, bool) {
	if id == 0 {
		return Site{}, false
	}
	if t.index != nil {
		i, ok := t.index[id]
		if !ok {
			return Site{}, false
		}
		return t.Sites[i], true
	}
	for _, s := range t.Sites {
		if s.ID == id {
			return s, true
		}
	}
	return Site{}, false
}

// Index builds the id index Lookup uses and checks the ids: nonzero, at
// most MaxID, unique. Call it before sharing the table between goroutines.
func (t *Table) Index() error {
	idx := make(map[uint32]int, len(t.Sites))
	for i, s := range t.Sites {
		if s.ID == 0 || s.ID > MaxID {
			return fmt.Errorf("site %d has id %d, want 1..%d", i, s.ID, MaxID)
		}
		if j, dup := idx[s.ID]; dup {
			return fmt.Errorf("sites %d and %d share id %d", j, i, s.ID)
		}
		idx[s.ID] = i
	}
	t.index = idx
	return nil
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
	if err := t.Index(); err != nil {
		return nil, fmt.Errorf("site table %s: %w", path, err)
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
