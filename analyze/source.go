package analyze

import (
	"errors"
	"fmt"

	"github.com/memorder/wafl/internal/trace"
)

// Meta is what the analyzer uses of a trace's metadata.
type Meta struct {
	Package, Test, Binary, Sites string
}

// Source is a stream of trace batches. Run may read the trace more than
// once, opening a fresh Source for every pass; every Source of one
// analysis must yield the same rows.
type Source interface {
	Meta() Meta
	// Next advances to the next batch and reports whether there is one.
	Next() bool
	// Batch returns the current batch, valid until the next call to Next.
	// The analysis only reads it.
	Batch() *trace.Batch
	// Err is the error that ended the stream, if any. An error for which
	// IsTruncated reports true means the rows so far are a valid prefix.
	Err() error
	Close() error
}

// Opener opens a fresh Source over the same trace for every pass.
type Opener func() (Source, error)

// ErrTruncated marks a Source error after which the rows already read are
// a valid prefix of the trace (the recorder died mid-write). It is
// trace.ErrTruncated, which every trace and spill-file reader wraps.
var ErrTruncated = trace.ErrTruncated

// IsTruncated reports whether err says the trace ended early but its
// prefix is readable.
func IsTruncated(err error) bool { return errors.Is(err, ErrTruncated) }

// passError wraps a Source error with the pass it happened in.
func passError(pass string, err error) error {
	return fmt.Errorf("%s: %w", pass, err)
}
