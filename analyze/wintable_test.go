package analyze

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/plans"
)

// TestWinTableIsTheUnionPerKey: whatever the order the windows arrive in,
// and however they are split between tables that are merged, each key
// ends with the union of its windows as disjoint sorted intervals (closed
// intervals that touch are one).
func TestWinTableIsTheUnionPerKey(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		type win struct {
			k  ivKey
			iv interval
		}
		var ws []win
		keys := 1 + r.IntN(3000) // enough to grow the table and fill chunks
		n := 20000 + r.IntN(30000)
		for range n {
			k := ivKey{first: uint32(1 + r.IntN(50)), g: uint64(1 + r.IntN(max(keys/50, 1)))}
			lo := r.Int64N(1_000_000)
			ws = append(ws, win{k, interval{lo, lo + r.Int64N(2_000)}})
		}
		want := map[ivKey][]interval{}
		for _, w := range ws {
			want[w.k] = append(want[w.k], w.iv)
		}
		for k, ivs := range want {
			slices.SortFunc(ivs, func(x, y interval) int { return cmp.Compare(x.lo, y.lo) })
			out := []interval{ivs[0]}
			for _, iv := range ivs[1:] {
				if c := &out[len(out)-1]; iv.lo <= c.hi {
					c.hi = max(c.hi, iv.hi)
				} else {
					out = append(out, iv)
				}
			}
			want[k] = out
		}
		// Two tables, the second merged into the first.
		a, b := newWinTable(), newWinTable()
		for i, w := range ws {
			if i%3 == 2 {
				b.add(w.k.first, w.k.g, w.iv)
			} else {
				a.add(w.k.first, w.k.g, w.iv)
			}
		}
		a.merge(b)
		var gotOrder []ivKey
		retired := len(a.chunks)
		counts := map[ivKey]int{}
		a.counts(func(k ivKey, n int) { counts[k] = n })
		a.each(func(k ivKey, ivs []interval) {
			gotOrder = append(gotOrder, k)
			if fmt.Sprint(ivs) != fmt.Sprint(want[k]) {
				t.Fatalf("seed %d key %v: got %v, want %v", seed, k, ivs, want[k])
			}
			if len(ivs) > counts[k] {
				t.Fatalf("seed %d key %v: %d intervals, counts said at most %d", seed, k, len(ivs), counts[k])
			}
		})
		if len(gotOrder) != len(want) {
			t.Fatalf("seed %d: %d keys, want %d", seed, len(gotOrder), len(want))
		}
		if seed == 1 && retired < 2 {
			t.Fatalf("seed 1: %d chunks of retired windows; the test does not reach a second chunk", retired)
		}
	}
}

// TestPass1AllocatesNothingPerBatch: once its tables have grown, pass 1's
// hot path — the reordering, the interference log, the counting and the
// streaming pair pass — allocates nothing per batch (testing.AllocsPerRun
// rounds down: the amortized growth of the log's chunk lists, a few
// allocations in a hundred batches, passes; so does a new chunk of the
// check-then-act pass's dispose rows). Every run feeds the
// same rows (objects initialized, used by other goroutines, disposed, and
// initialized again) one window later, so the pairs, windows and log
// entries it makes are of kinds already seen.
func TestPass1AllocatesNothingPerBatch(t *testing.T) {
	const (
		rows  = 4096
		objs  = 64
		step  = 50_000 // ns between rows
		delta = 100 * ms
	)
	a := newAnalysis(context.Background(), nil, delta, Options{}, &tuning{})
	s := newStreaming(a)
	defer s.close()
	ro, pre := s.decode()
	in := &trace.Batch{}
	out := &trace.Batch{
		Time: make([]int64, 0, 2*rows), G: make([]uint64, 0, 2*rows), Clock: make([]uint32, 0, 2*rows),
		Site: make([]uint32, 0, 2*rows), Obj: make([]uint64, 0, 2*rows), Op: make([]uint8, 0, 2*rows),
	}
	base := int64(0)
	feed := func() {
		in.Reset()
		for i := range rows {
			obj := uint64(0x1000 + i%objs)
			var op abi.Op
			switch (i / objs) % 8 {
			case 0:
				op = abi.OpInit
			case 7:
				op = abi.OpDispose
			default:
				op = abi.OpUse
			}
			g := uint64(1 + (i/objs)%5)
			in.Append(base+int64(i)*step, g, 1, uint32(10*int(op)+i%3+1), obj, uint8(op))
		}
		base += rows * step
		ro.add(in)
		for {
			out.Reset()
			more := ro.drain(out, false)
			if len(out.Time) > 0 {
				a.count(out)
				a.checks.batch(out)
				pre(out)
				if err := s.batch(out); err != nil {
					t.Fatal(err)
				}
			}
			if !more {
				break
			}
		}
	}
	for range 200 {
		feed()
	}
	if allocs := testing.AllocsPerRun(100, feed); allocs != 0 {
		t.Fatalf("%v allocations per batch of pass 1", allocs)
	}
	if s.sp.p.instances == 0 || s.log.rows == 0 {
		t.Fatalf("no instances (%d) or log rows (%d): the test is vacuous", s.sp.p.instances, s.log.rows)
	}
}

// TestWindowsOfUnplannedFirstLocation: a pair's ℓ1 that the plan did not
// keep still has windows in the table; an event inside one of them must
// not mark an interference entry for a location index of -1 (a real trace
// of centrifuge's client tests did, and the analysis panicked).
func TestWindowsOfUnplannedFirstLocation(t *testing.T) {
	a := &analysis{delta: 100, wins: newWinTable()}
	a.wins.add(99, 1, interval{0, 50}) // ℓ1 = site 99: not in the plan
	a.wins.add(5, 1, interval{0, 50})  // ℓ1 = site 5: location 0
	a.wins.add(99, 2, interval{0, 50}) // a goroutine with only unplanned windows
	locs := []plans.Location{{Site: 5}, {Site: 7}}
	w := a.windows(locs)
	w.event(10, 1, 7) // ℓ* = site 7 inside both of goroutine 1's windows
	w.event(10, 2, 7)
	got := w.m.entries()
	if len(got) != 2 || !slices.Equal(got[0], []int32{1}) || len(got[1]) != 0 {
		t.Fatalf("interference entries %v, want ℓ1=0 interfered by ℓ*=1 only", got)
	}
}

// panicSource is a Source whose reading panics, standing for a bug
// anywhere in the analysis's goroutines.
type panicSource struct{ SliceSource }

func (s *panicSource) Next() bool { panic("boom in the reader") }

// TestPanicIsAnInternalError: a panic in the analysis (here in the
// goroutine that reads the trace) comes back from Run as an
// *InternalError with its stack, not as a crash of the process.
func TestPanicIsAnInternalError(t *testing.T) {
	open := func() (Source, error) { return &panicSource{}, nil }
	_, _, err := Run(context.Background(), open, Options{})
	var ie *InternalError
	if !errors.As(err, &ie) || ie.Value != "boom in the reader" || !bytes.Contains(ie.Stack, []byte("panicSource")) {
		t.Fatalf("Run = %v, want an *InternalError with the reader's stack", err)
	}
	if !strings.Contains(err.Error(), "wafl bug") {
		t.Errorf("error %q does not say it is a wafl bug", err)
	}
}
