// Package instrument rewrites the packages under test with dave/dst so that
// every MEMORDER site calls the wafl runtime. It works on type-checked
// syntax and returns source: it neither loads packages nor runs the go
// command, and writes no files (internal/build does all three).
//
// RewritePackage is the entry point: given one package as
// golang.org/x/tools/go/packages loaded it (with its tests) and the build's
// SiteAlloc, it picks the sites on the type-checked syntax (init, dispose
// and dynamic stores into reference slots, uses that dereference them,
// close and send on channels, sync/atomic Pointer and Value stores and
// loads), rewrites the files with inline calls of small generated helpers
// that make the runtime ABI calls (docs/design.md), gives go statements
// Fork/Adopt, replaces os.Exit, wraps or generates TestMain so that the
// runtime's Finish runs, and keeps the user's line numbers with /*line*/
// directives. It returns the rewritten and generated files; the SiteAlloc
// collects the site table (package sites) of the build.
//
// docs/instrumentation.md describes the rewrite rules and the guarantees.
package instrument
