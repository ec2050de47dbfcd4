// Package record holds the hook API that instrumented code calls at every
// MEMORDER site (init, use, dispose, fork) and the preparation-run recorder
// that logs those events (WAFL thesis §4.2, §5).
//
// The mode is chosen once, in init, from WAFL_MODE: unset (hooks off),
// "record" (events to the spill file WAFL_TRACE) or "detect" (hooks call
// inject.At; inject.Setup loads the plan). With the hooks off, Init,
// Dispose, Store, Use, Fork and Adopt inline to one atomic load and a
// branch.
//
// While recording, an event (monotonic ns time, goroutine, the goroutine's
// own clock from package lcc, site, object, op) is written into the current
// buffer of the goroutine's shard (shards are chosen by goroutine id): a
// slot is reserved with one compare-and-swap on the buffer's state word,
// which also names the owning shard, so no global lock is taken and nothing
// is allocated. A goroutine that finds its buffer full takes that shard's
// lock to swap in a fresh buffer and queue the full one. A writer goroutine,
// started on demand and gone when the queue is empty, writes queued buffers
// to the raw spill file in framed, checksummed batches
// (docs/trace-format.md); a timer, armed only while events arrive, seals
// partly filled buffers every 25 ms so a crash loses at most that much;
// Finish or Exit drains everything. An idle recorder has no goroutine, so
// goroutine-leak checks (goleak) in the tests under study are not
// disturbed. One goroutine's events stay in program order because they all
// go through one shard whose buffers are written in hand-off order.
//
// The wafl process converts the spill file to Arrow IPC (package
// record/trace), so Arrow never links into the test binary.
package record
