// Package build builds instrumented test binaries, leaving the user's tree
// untouched: it loads the packages matched by the patterns (with their
// tests, the main module's packages their test binaries link, and the
// dependencies instrumented on request) through
// golang.org/x/tools/go/packages, asks package instrument to rewrite each
// of them with one site allocator, writes the rewritten files and the
// build overlay into wafl's work directory, writes the runtime module
// from wafl.RuntimeFS and the alternate go.mod and go.sum that require
// it, and runs go test -c in batches. The site table of the build
// (package sites) is written next to every binary.
//
// Build is the entry point; Cached reuses the last build of a work
// directory when nothing it read has changed. docs/instrumentation.md
// describes the work directory layout.
package build
