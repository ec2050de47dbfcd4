// Package record is the preparation-run recorder (WAFL thesis §4.2, §5):
// it logs the events package hook hands it to the raw spill file
// (abi.RawEvent records, docs/trace-format.md). Package hook starts it
// (Start) when WAFL_MODE=record, adds events (Add, AddFork) and stops it
// (Stop) in Finish or Exit.
//
// An event (monotonic ns time, goroutine, the goroutine's own clock from
// package lcc, site, object, op) is written into the current buffer of the
// goroutine's shard (shards are chosen by goroutine id): a slot is
// reserved with one compare-and-swap on the buffer's state word, which
// also names the owning shard, so no global lock is taken and nothing is
// allocated. A buffer is an array of abi.RawEvent, the spill file's record
// layout. A goroutine that finds its buffer full takes that shard's lock
// to swap in a fresh buffer and queue the full one. A writer goroutine,
// started on demand and gone when the queue is empty, writes queued
// buffers to the raw spill file in framed, checksummed batches; a timer,
// armed only while events arrive, seals partly filled buffers every 25 ms
// so a crash loses at most that much; Stop drains everything. An idle
// recorder has no goroutine, so goroutine-leak checks (goleak) in the
// tests under study are not disturbed. One goroutine's events stay in
// program order because they all go through one shard whose buffers are
// written in hand-off order.
//
// The wafl process converts the spill file to Arrow IPC (package
// record/trace), so Arrow never links into the test binary.
package record
