package analyze

import (
	"context"
	"fmt"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/plans"
)

// File analyzes the Arrow IPC trace at path (record/trace) and returns the
// plan of its test. It reads the file once, or more often when the rows are
// too far out of time order, streaming; see Run.
// Errors name the file. When opts.BinaryHash is empty and the trace's
// binary exists, its SHA-256 goes into the plan's provenance.
func File(ctx context.Context, path string, opts Options) (*plans.Plan, *Stats, error) {
	if opts.Trace == "" {
		opts.Trace = path
	}
	open := func() (Source, error) {
		r, err := trace.Open(path)
		if err != nil {
			return nil, err
		}
		return &traceSource{r: r}, nil
	}
	if opts.BinaryHash == "" {
		if r, err := trace.Open(path); err == nil {
			bin := r.Meta().Binary
			r.Close()
			if bin != "" {
				if h, err := abi.HashFile(bin); err == nil {
					opts.BinaryHash = h
				}
			}
		}
	}
	p, st, err := Run(ctx, open, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("analyze %s: %w", path, err)
	}
	return p, st, nil
}

// traceSource adapts a *trace.Reader to Source.
type traceSource struct {
	r      *trace.Reader
	closed bool
}

func (s *traceSource) Meta() Meta {
	m := s.r.Meta()
	return Meta{Package: m.Package, Test: m.Test, Binary: m.Binary, Sites: m.Sites}
}

func (s *traceSource) Next() bool {
	if !s.r.Next() {
		return false
	}
	return true
}

func (s *traceSource) Batch() *trace.Batch { return s.r.Batch() }
func (s *traceSource) Err() error          { return s.r.Err() }

func (s *traceSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.r.Close()
}

// Raw analyzes the recorder's spill file at path as if it had been
// converted to an Arrow trace with trace.ConvertWithout(path, …, meta,
// pauses) first, without reading one: for a trace wafl reads once and
// throws away, or converts at the same time. Errors name opts.Trace
// (default path).
func Raw(ctx context.Context, path string, meta trace.Meta, pauses *trace.Pauses, opts Options) (*plans.Plan, *Stats, error) {
	if opts.Trace == "" {
		opts.Trace = path
	}
	open := func() (Source, error) {
		s, err := trace.OpenRaw(path, meta, pauses)
		if err != nil {
			return nil, err
		}
		return rawSource{s}, nil
	}
	p, st, err := Run(ctx, open, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("analyze %s: %w", opts.Trace, err)
	}
	return p, st, nil
}

// rawSource adapts a *trace.RawSource to Source.
type rawSource struct{ *trace.RawSource }

func (s rawSource) Meta() Meta {
	m := s.RawSource.Meta()
	return Meta{Package: m.Package, Test: m.Test, Binary: m.Binary, Sites: m.Sites}
}
