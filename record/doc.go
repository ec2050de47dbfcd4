// Package record holds the hook API that instrumented code calls at every
// MEMORDER site (init, use, dispose, fork) and the preparation-run recorder
// that logs those events (WAFL thesis §4.2, §5).
//
// With recording off a hook is a load and a branch. With recording on,
// events go to sharded buffers without allocation or a global lock and are
// handed off in batches to a background writer that appends them to a raw
// spill file; the wafl process converts that file to Arrow IPC
// (package record/trace), so Arrow never links into the test binary.
package record
