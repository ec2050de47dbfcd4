// Package wafl draws the line between the two sides of wafl and carries
// the source of one of them.
//
// The runtime is linked into the user's test binary: abi (the event format
// and the WAFL_* names), hook (the entry points instrumented code calls and
// the mode switch), lcc (goroutine identity and fork clocks), record (the
// preparation-run recorder), inject (the detection-run runtime) and plans
// (the plan file). It imports only the standard library, its own packages
// and the leaf modules in RuntimeRequires (github.com/petermattis/goid), so
// that linking it into a user's test binary does not change the user's
// dependency graph, and its folders hold nothing but runtime code.
//
// Everything else in the module is tool code and runs in the wafl process:
// cmd/wafl, instrument, analyze and internal/... The tool may import
// runtime packages (abi, lcc and plans; never hook, record or inject, whose
// init reads WAFL_MODE); the runtime never imports the tool.
//
// RuntimeFS embeds exactly the runtime's source, from which the wafl
// command writes the runtime module of every instrumented build
// (internal/build), offline and wherever wafl was installed from. The tests
// of this package enforce the boundary and the embedded set.
package wafl

import (
	"embed"
)

// RuntimePackages are the directories (relative to the module root) of the
// runtime packages.
var RuntimePackages = []string{"hook", "abi", "lcc", "record", "inject", "plans"}

// RuntimeRequires are the modules the runtime imports besides the standard
// library, as "path version" pairs matching go.mod.
var RuntimeRequires = []string{"github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261"}

// RuntimeSums are the go.sum lines of RuntimeRequires, as in go.sum: the
// go.sum of the runtime module.
const RuntimeSums = `github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261 h1:lcWAnrqr2nNfDiArwFNHCE4787Mw2tCdVSOXCru0/0E=
github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261/go.mod h1:pxMtw7cyUw6B2bRH0ZBANSPg+AoSud1I1iyJHI69jH4=
`

// RuntimeFS holds the runtime's source: the non-test .go and .s files of
// each RuntimePackages directory, build-constrained ones included (the
// user's build selects them), and nothing else. TestRuntimeFS names any
// file to add or remove here.
//
//go:embed hook/before.go hook/checks.go hook/doc.go hook/entry.go hook/hook.go hook/netns_linux.go hook/netns_other.go hook/tests.go
//go:embed abi/ablation.go abi/doc.go abi/entry.go abi/env.go abi/hash.go abi/op.go abi/raw.go abi/runlog.go abi/stamp.go abi/stamp_linux.go abi/stamp_other.go
//go:embed lcc/doc.go lcc/forest.go lcc/lcc.go lcc/token.go
//go:embed record/doc.go record/recorder.go record/time.go
//go:embed inject/api.go inject/binhash.go inject/config.go inject/doc.go inject/engine.go inject/log.go inject/online.go inject/panics.go inject/sitetab.go inject/sleep_linux.go inject/sleep_other.go
//go:embed plans/doc.go plans/file.go plans/learn.go plans/online.go plans/params.go plans/plan.go plans/subtests.go plans/update.go
var RuntimeFS embed.FS
