// Package vet is wafl's coding-time checker: a go/analysis Analyzer that
// reports MEMORDER hints, places where one goroutine may use a value before
// another initialized it or after another disposed of it.
//
// It works per package on SSA (golang.org/x/tools/go/analysis/passes/buildssa)
// with a bounded intra-package call graph: static calls, func values resolved
// by variable type analysis (golang.org/x/tools/go/callgraph/vta), and
// interface calls resolved to the package's own methods whose receivers'
// types VTA sees flow there. It reports four kinds:
//
//   - use-before-init: a field (or package variable, or captured local) of
//     pointer, map, chan, func or interface type that a goroutine may
//     dereference, while the function that started the goroutine (or handed
//     it a func value it calls) stores the first non-nil value only after
//     that; or a field that only a goroutine sets while another function
//     dereferences it without waiting for that goroutine.
//   - use-after-dispose: a field that a goroutine may dereference while
//     another function sets it to nil or closes it, with no order between
//     the two that the analyzer can prove; and an entry of a map (or a
//     sync.Map) that one goroutine looks up and dereferences without
//     checking that it is there while another deletes entries of the map.
//   - check-then-act: a close guarded by a check of the same state (a closed
//     flag, a select with a default on the channel, a nil check, a comma-ok
//     lookup) outside one critical section, in a function that may run twice
//     concurrently; and a send guarded by a closed flag that another function
//     sets before it closes the channel.
//   - WaitGroup: Add called after starting the goroutine that calls Done.
//
// Order it can prove removes a hint: the goroutine joined before the dispose
// (sync.WaitGroup.Wait, or a receive from a channel that the goroutine closes
// or sends on after its use), the same mutex held over both accesses, a nil
// check of the loaded value before it is dereferenced, the init before the
// go statement. Precision comes first: when the analyzer cannot tell, it
// stays silent. docs/vet.md describes the rules, their limits and how they do
// on the corpus.
//
// The analyzer imports only the standard library and golang.org/x/tools; it
// runs as `wafl vet`, as `go vet -vettool=$(which wafl-vet)`, and wherever a
// go/analysis Analyzer runs.
package vet
