// Package abi is the contract between an instrumented test binary and the
// wafl process: the event format and the environment that drives a run.
//
// It owns, once, everything both sides must agree on:
//
//   - the op codes of trace events (Op) and the event spec table (Specs),
//     with FormatVersion;
//   - the raw spill-file layout the recorder writes and its codec
//     (RawEvent, AppendRawEvents, RawReader), docs/trace-format.md;
//   - the trace's column table (Columns) and the column batch every reader
//     and the analyzer pass around (Batch);
//   - the WAFL_* environment variable names, the mode values and the exit
//     status of a run that cannot set up (env.go, docs/design.md);
//   - the detection run log's record kinds, skip reasons and record shapes
//     (runlog.go, docs/report-format.md).
//
// abi is a leaf: standard library only, no package state with side effects
// and no init, so the wafl process can link it without linking the runtime
// (hook, record, inject). It is also part of the runtime source embedded in
// the wafl binary, so it must not use language features newer than Go 1.22.
package abi
