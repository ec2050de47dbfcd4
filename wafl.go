// Package wafl carries the source of the wafl runtime so that the wafl
// command can build instrumented test binaries offline, wherever it was
// installed from.
//
// The runtime is the set of packages that instrumented code links against:
// hook (the entry points instrumented code calls and the mode switch), abi
// (the event format and the WAFL_* names), lcc (goroutine identity and fork
// clocks), record (the preparation-run recorder), inject (the detection-run
// runtime) and plans (the plan file). They import only the standard
// library, each other and tiny leaf modules listed in RuntimeRequires, so
// that linking them into a user's test binary does not change the user's
// dependency graph. TestRuntimeImports enforces this.
package wafl

import (
	"embed"
)

// RuntimePackages are the directories (relative to the module root) that
// make up the runtime linked into instrumented test binaries.
var RuntimePackages = []string{"hook", "abi", "lcc", "record", "inject", "plans"}

// RuntimeRequires are the modules the runtime imports besides the standard
// library, as "path version" pairs matching go.mod.
var RuntimeRequires = []string{"github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261"}

// RuntimeFS holds the runtime packages' files. Only the non-test .go and .s
// files directly in each RuntimePackages directory belong to the runtime;
// subdirectories (for example record/trace, which uses Arrow) are wafl-side.
//
//go:embed hook abi lcc record inject plans go.sum
var RuntimeFS embed.FS
