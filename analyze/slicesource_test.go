package analyze

import "github.com/memorder/wafl/internal/trace"

// SliceSource is a Source over batches held in memory.
type SliceSource struct {
	M       Meta
	Batches []trace.Batch
	// Fail, if set, is returned by Err after the last batch.
	Fail error
	i    int
}

// Opener returns an Opener that yields a fresh copy of s for each pass.
func (s *SliceSource) Opener() Opener {
	return func() (Source, error) {
		c := *s
		c.i = 0
		return &c, nil
	}
}

func (s *SliceSource) Meta() Meta { return s.M }
func (s *SliceSource) Next() bool {
	if s.i >= len(s.Batches) {
		return false
	}
	s.i++
	return true
}
func (s *SliceSource) Batch() *trace.Batch { return &s.Batches[s.i-1] }
func (s *SliceSource) Err() error {
	if s.i >= len(s.Batches) {
		return s.Fail
	}
	return nil
}
func (s *SliceSource) Close() error { return nil }
