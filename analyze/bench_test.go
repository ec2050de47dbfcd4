package analyze

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memorder/wafl/internal/trace"
)

// synthSource is a Source that generates a synthetic trace on the fly in
// a producer goroutine (double-buffered), so a pass costs max(generation,
// analysis) and needs no file.
type synthSource struct {
	ch   chan *trace.Batch
	back chan *trace.Batch
	cur  *trace.Batch
	done chan struct{}
	once sync.Once
}

func synthOpener(cfg synthConfig) Opener {
	return func() (Source, error) {
		s := &synthSource{ch: make(chan *trace.Batch), back: make(chan *trace.Batch, 2), done: make(chan struct{})}
		s.back <- &trace.Batch{}
		s.back <- &trace.Batch{}
		go func() {
			defer close(s.ch)
			synthGenerate(cfg, func(b *trace.Batch) error {
				var out *trace.Batch
				select {
				case out = <-s.back:
				case <-s.done:
					return context.Canceled
				}
				out.CopyFrom(b)
				select {
				case s.ch <- out:
					return nil
				case <-s.done:
					return context.Canceled
				}
			})
		}()
		return s, nil
	}
}

func (s *synthSource) Meta() Meta { return Meta{Package: "synthetic", Test: "TestSynthetic"} }
func (s *synthSource) Next() bool {
	if s.cur != nil {
		s.back <- s.cur
	}
	b, ok := <-s.ch
	s.cur = b
	return ok
}
func (s *synthSource) Batch() *trace.Batch { return s.cur }
func (s *synthSource) Err() error          { return nil }
func (s *synthSource) Close() error {
	s.once.Do(func() { close(s.done) })
	for range s.ch {
	}
	return nil
}

// peakHeap samples the live heap until stop is closed and returns the
// largest value seen.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
		var peak uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[1].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

func benchAnalyze(b *testing.B, open Opener, events int, tune tuning) {
	b.ReportAllocs()
	runtime.GC()
	stop := make(chan struct{})
	peak := peakHeap(stop)
	var st *Stats
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		_, st, err = run(context.Background(), open, Options{}, &tune)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	close(stop)
	// CPU seconds of the whole process per analysis: unlike ns/op, not
	// inflated when other processes compete for the cores.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
	// peak-MiB is the memory of the Go runtime (heap and its overhead);
	// rss-MiB the process's peak resident memory, which also counts the
	// analyzer's tables kept outside the heap (offHeap) and everything the
	// benchmark process did before.
	b.ReportMetric(float64(<-peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(maxRSS())/(1<<20), "rss-MiB")
	b.ReportMetric(float64(st.Candidates), "candidates")
	b.Logf("stats: %+v", *st)
}

// BenchmarkAnalyzeSynthetic analyzes a generated 5M-event trace without a
// file; generation runs concurrently on a second core.
func BenchmarkAnalyzeSynthetic(b *testing.B) {
	cfg := synthConfig{Events: 5_000_000, Seed: 1}
	benchAnalyze(b, synthOpener(cfg), cfg.Events, tuning{})
}

// BenchmarkAnalyzeMemory analyzes a pre-generated 5M-event trace held in
// memory: the analyzer's own cost, without generation or decoding.
func BenchmarkAnalyzeMemory(b *testing.B) {
	cfg := synthConfig{Events: 5_000_000, Seed: 1}
	benchAnalyze(b, synthSlice(cfg.Events).Opener(), cfg.Events, tuning{})
}

// synthSlice holds a synthetic trace of n rows (seed 1) in memory.
func synthSlice(n int) *SliceSource {
	cfg := synthConfig{Events: n, Seed: 1}
	src := &SliceSource{M: Meta{Package: "synthetic", Test: "TestSynthetic"}}
	synthGenerate(cfg, func(sb *trace.Batch) error {
		var c trace.Batch
		c.CopyFrom(sb)
		src.Batches = append(src.Batches, c)
		return nil
	})
	return src
}

// benchTrace returns the path of a synthetic trace of cfg.Events rows,
// writing it on first use. It is kept in the temporary directory across
// runs (name keyed by the configuration) because writing 50M rows takes a
// while; delete it to regenerate.
func benchTrace(b *testing.B, cfg synthConfig) string {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("wafl-analyze-bench-%d-%d-v1.arrows", cfg.Events, cfg.Seed))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	start := time.Now()
	tmp := path + ".tmp"
	w, err := trace.Create(tmp, trace.Meta{Package: "synthetic", Test: "TestSynthetic"})
	if err != nil {
		b.Fatal(err)
	}
	err = synthGenerate(cfg, func(sb *trace.Batch) error {
		return w.Write(sb)
	})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		b.Fatal(err)
	}
	b.Logf("wrote %s (%d events) in %v", path, cfg.Events, time.Since(start))
	return path
}

// BenchmarkAnalyzeFile50M analyzes a 50M-event synthetic Arrow trace
// through record/trace: the number docs/benchmarks-analyze.md reports.
func BenchmarkAnalyzeFile50M(b *testing.B) {
	cfg := synthConfig{Events: 50_000_000, Seed: 1}
	path := benchTrace(b, cfg)
	open := func() (Source, error) {
		r, err := trace.Open(path)
		if err != nil {
			return nil, err
		}
		return &traceSource{r: r}, nil
	}
	benchAnalyze(b, open, cfg.Events, tuning{})
}

// BenchmarkAnalyzeFile50MExact is BenchmarkAnalyzeFile50M without the
// streaming pair pass: what a trace costs whose rows arrive out of time
// order per object (the streaming pass detects that early and falls back
// to this), e.g. one converted from the recorder's per-shard buffers.
func BenchmarkAnalyzeFile50MExact(b *testing.B) {
	cfg := synthConfig{Events: 50_000_000, Seed: 1}
	path := benchTrace(b, cfg)
	open := func() (Source, error) {
		r, err := trace.Open(path)
		if err != nil {
			return nil, err
		}
		return &traceSource{r: r}, nil
	}
	benchAnalyze(b, open, cfg.Events, tuning{noStream: true})
}

// BenchmarkReadFile50M is the floor under BenchmarkAnalyzeFile50M: one
// pass over the same file through record/trace, touching every column.
func BenchmarkReadFile50M(b *testing.B) {
	cfg := synthConfig{Events: 50_000_000, Seed: 1}
	path := benchTrace(b, cfg)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := trace.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		var sum uint64
		for r.Next() {
			bt := r.Batch()
			for j, op := range bt.Op {
				sum += uint64(op) + uint64(bt.Site[j])
			}
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		r.Close()
		if sum == 0 {
			b.Fatal("empty trace")
		}
	}
	b.ReportMetric(float64(cfg.Events)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
}

// maxRSS is the peak resident memory of this process in bytes (Linux
// reports ru_maxrss in KiB).
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) << 10
}

// cpuTime is the user+system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
