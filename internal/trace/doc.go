// Package trace reads and writes wafl preparation-run traces: Arrow IPC
// streams with one row per event and the columns of Columns
// (docs/trace-format.md), and converts the recorder's raw spill file
// (RawReader; written by package record) into them.
//
// It runs in the wafl process only; the test binary writes the raw spill
// file, so Arrow never links into the program under test. Readers stream
// record batch by record batch and expose the columns as slices over the
// Arrow buffers (an Batch): no Go struct per event. A stream cut short
// (a crashed test or an interrupted conversion) reads up to its last
// complete batch and then reports an error wrapping ErrTruncated.
// Malformed input yields an error, never a panic.
package trace
