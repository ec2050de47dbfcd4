// Package instrument rewrites the packages under test with dave/dst so that
// every MEMORDER site calls the wafl runtime, and builds each package's test
// binary through an overlay and an alternate go.mod in wafl's work
// directory, leaving the user's tree untouched.
//
// Build is the entry point: it loads the packages matched by the patterns
// (with their tests) through golang.org/x/tools/go/packages, picks the sites
// on the type-checked syntax (init, dispose and dynamic stores into
// reference slots, uses that dereference them, close and send on channels,
// sync/atomic Pointer and Value stores and loads), rewrites the files with
// inline calls of small generated helpers that make the runtime ABI calls
// (docs/design.md), gives go statements Fork/Adopt, replaces os.Exit,
// wraps or generates TestMain so that the runtime's Finish runs, keeps the
// user's line numbers with /*line*/ directives, writes the runtime module
// from wafl.RuntimeFS, and runs go test -c per package. The site table of
// the build (package sites) is written next to every binary.
//
// docs/instrumentation.md describes the rewrite rules, the work directory
// layout and the guarantees.
package instrument
