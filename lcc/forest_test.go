package lcc

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func ev(g uint64, c uint32) Event { return Event{G: g, Clock: c} }

func TestForestSemantics(t *testing.T) {
	// 1 forks 2 at clock 1 and 3 at clock 2; 2 forks 4 at clock 1;
	// 4 forks 5 at clock 3 (after forking twice elsewhere). 9 is unknown.
	f, err := NewForest([]Edge{
		{Parent: 1, Clock: 1, Child: 2},
		{Parent: 1, Clock: 2, Child: 3},
		{Parent: 2, Clock: 1, Child: 4},
		{Parent: 4, Clock: 3, Child: 5},
		{Parent: 7, Clock: 4, Child: 8},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		a, b Event
		hb   bool // a happens before b
	}{
		{ev(1, 1), ev(2, 1), true},  // parent before the fork -> child
		{ev(1, 2), ev(2, 1), false}, // parent after the fork is concurrent with the child
		{ev(1, 2), ev(3, 1), true},
		{ev(1, 3), ev(3, 5), false},
		{ev(2, 1), ev(3, 1), false}, // siblings
		{ev(1, 1), ev(4, 1), true},  // grandchild
		{ev(1, 1), ev(5, 7), true},  // great-grandchild
		{ev(2, 1), ev(5, 1), true},
		{ev(2, 2), ev(5, 1), false},
		{ev(4, 3), ev(5, 1), true},
		{ev(4, 4), ev(5, 1), false},
		{ev(3, 1), ev(5, 1), false}, // uncle
		{ev(5, 1), ev(1, 9), false}, // no joins: child never before parent
		{ev(1, 1), ev(1, 2), true},  // program order across a fork
		{ev(1, 2), ev(1, 2), false},
		{ev(9, 1), ev(1, 5), false}, // unknown goroutine
		{ev(1, 1), ev(9, 5), false},
		{ev(7, 4), ev(8, 1), true}, // a second tree
		{ev(1, 1), ev(8, 1), false},
	}
	for _, tc := range tests {
		if got := f.HappensBefore(tc.a, tc.b); got != tc.hb {
			t.Errorf("HappensBefore(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.hb)
		}
		wantConc := tc.a.G != tc.b.G && !tc.hb && !f.HappensBefore(tc.b, tc.a)
		if got := f.Concurrent(tc.a, tc.b); got != wantConc {
			t.Errorf("Concurrent(%v, %v) = %v, want %v", tc.a, tc.b, got, wantConc)
		}
	}
	if f.Concurrent(ev(1, 1), ev(1, 1)) {
		t.Error("an event is concurrent with itself")
	}
	if !f.Concurrent(ev(9, 1), ev(10, 1)) {
		t.Error("two unknown goroutines are not concurrent")
	}
	if f.Len() != 7 {
		t.Errorf("Len() = %d, want 7", f.Len())
	}
}

// TestForestAddRefusesWhatWouldChangeAnAnswer grows a forest edge by edge
// between queries.
func TestForestAddRefusesWhatWouldChangeAnAnswer(t *testing.T) {
	f := new(Forest)
	if err := f.Add(Edge{Parent: 1, Clock: 1, Child: 2}); err != nil {
		t.Fatal(err)
	}
	if f.Concurrent(ev(1, 1), ev(2, 1)) || !f.Concurrent(ev(2, 1), ev(3, 1)) {
		t.Fatal("wrong answers")
	}
	// The queries took 1 (the top of 2's tree) and 3 (unknown) to be roots.
	for _, tc := range []struct {
		e    Edge
		want error
	}{
		{Edge{Parent: 9, Clock: 1, Child: 1}, ErrAnswered},
		{Edge{Parent: 9, Clock: 1, Child: 3}, ErrAnswered},
		{Edge{Parent: 9, Clock: 1, Child: 2}, ErrForkedTwice},
		{Edge{Parent: 4, Clock: 1, Child: 4}, ErrCycle},
	} {
		if err := f.Add(tc.e); !errors.Is(err, tc.want) {
			t.Errorf("Add(%v) = %v, want %v", tc.e, err, tc.want)
		}
	}
	// 5 → 6 → 7, the lower edge first (nothing asked about them yet).
	for _, e := range []Edge{{Parent: 6, Clock: 2, Child: 7}, {Parent: 5, Clock: 1, Child: 6}} {
		if err := f.Add(e); err != nil {
			t.Fatalf("Add(%v): %v", e, err)
		}
	}
	if err := f.Add(Edge{Parent: 7, Clock: 1, Child: 5}); !errors.Is(err, ErrCycle) {
		t.Errorf("closing 5 → 6 → 7 → 5: %v", err)
	}
	if !f.HappensBefore(ev(5, 1), ev(7, 1)) || f.HappensBefore(ev(5, 2), ev(7, 1)) || f.Len() != 5 {
		t.Errorf("after refusals: HappensBefore wrong or Len() = %d, want 5", f.Len())
	}
	// A goroutine asked about can still be a parent.
	if err := f.Add(Edge{Parent: 3, Clock: 1, Child: 8}); err != nil || !f.HappensBefore(ev(3, 1), ev(8, 1)) {
		t.Errorf("3 forks 8: %v", err)
	}
}

func TestForestErrors(t *testing.T) {
	for _, tc := range []struct {
		edges []Edge
		want  string
	}{
		{[]Edge{{1, 1, 2}, {3, 1, 2}}, "forked twice"},
		{[]Edge{{1, 1, 2}, {2, 1, 1}}, "cycle"},
		{[]Edge{{1, 1, 1}}, "forks itself"},
	} {
		_, err := NewForest(tc.edges)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewForest(%v) error = %v, want %q", tc.edges, err, tc.want)
		}
	}
	if _, err := NewForest([]Edge{{1, 1, 2}, {1, 1, 2}}); err != nil {
		t.Errorf("duplicate identical edge rejected: %v", err)
	}
}

// vcSim simulates a program with explicit vector clocks: the reference
// definition the Forest must match.
type vcSim struct {
	clocks map[uint64]map[uint64]uint32 // goroutine -> its current vector
	events []vcEvent
	edges  []Edge
	next   uint64
}

type vcEvent struct {
	e  Event
	vc map[uint64]uint32
}

func copyVC(v map[uint64]uint32) map[uint64]uint32 {
	c := make(map[uint64]uint32, len(v))
	for k, x := range v {
		c[k] = x
	}
	return c
}

func leq(a, b map[uint64]uint32) bool {
	for k, x := range a {
		if x > b[k] {
			return false
		}
	}
	return true
}

func (s *vcSim) spawn(parent uint64) uint64 {
	s.next++
	g := s.next
	var vc map[uint64]uint32
	if parent == 0 {
		vc = map[uint64]uint32{}
	} else {
		p := s.clocks[parent]
		vc = copyVC(p)
		s.edges = append(s.edges, Edge{Parent: parent, Clock: p[parent], Child: g})
		p[parent]++
	}
	vc[g] = 1
	s.clocks[g] = vc
	return g
}

func (s *vcSim) event(g uint64) {
	vc := s.clocks[g]
	s.events = append(s.events, vcEvent{e: Event{G: g, Clock: vc[g]}, vc: copyVC(vc)})
}

func TestForestMatchesVectorClocks(t *testing.T) {
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 7))
		s := &vcSim{clocks: map[uint64]map[uint64]uint32{}}
		var live []uint64
		for range 1 + r.IntN(3) {
			live = append(live, s.spawn(0))
		}
		steps := 50 + r.IntN(200)
		for range steps {
			g := live[r.IntN(len(live))]
			switch x := r.IntN(10); {
			case x < 3:
				live = append(live, s.spawn(g))
			case x < 4 && seed%2 == 0:
				// long chains: fork from the newest goroutine
				live = append(live, s.spawn(live[len(live)-1]))
			default:
				s.event(g)
			}
		}
		// Shuffle the edges: the Forest must not depend on their order.
		r.Shuffle(len(s.edges), func(i, j int) { s.edges[i], s.edges[j] = s.edges[j], s.edges[i] })
		f, err := NewForest(s.edges)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if seed%3 == 0 {
			// Grown edge by edge in the shuffled order, asked nothing
			// before: the same forest.
			f = new(Forest)
			for _, e := range s.edges {
				if err := f.Add(e); err != nil {
					t.Fatalf("seed %d: Add(%v): %v", seed, e, err)
				}
			}
		}
		for i := range s.events {
			for j := range s.events {
				a, b := s.events[i], s.events[j]
				want := leq(a.vc, b.vc) && !leq(b.vc, a.vc) // strictly before
				if got := f.HappensBefore(a.e, b.e); got != want {
					t.Fatalf("seed %d: HappensBefore(%v, %v) = %v, vector clocks say %v (%v vs %v)",
						seed, a.e, b.e, got, want, a.vc, b.vc)
				}
				wantConc := a.e.G != b.e.G && !leq(a.vc, b.vc) && !leq(b.vc, a.vc)
				if got := f.Concurrent(a.e, b.e); got != wantConc {
					t.Fatalf("seed %d: Concurrent(%v, %v) = %v, want %v", seed, a.e, b.e, got, wantConc)
				}
			}
		}
	}
}

func TestForestDeepChain(t *testing.T) {
	const n = 200000
	edges := make([]Edge, n)
	for i := range edges {
		edges[i] = Edge{Parent: uint64(i + 1), Clock: 2, Child: uint64(i + 2)}
	}
	f, err := NewForest(edges)
	if err != nil {
		t.Fatal(err)
	}
	if !f.HappensBefore(ev(1, 2), ev(n+1, 1)) || f.HappensBefore(ev(1, 3), ev(n+1, 1)) {
		t.Fatal("wrong answer on a deep chain")
	}
	if !f.HappensBefore(ev(n/2, 1), ev(n/2+3, 1)) {
		t.Fatal("wrong answer in the middle of a deep chain")
	}
}

func BenchmarkForestHappensBefore(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(1, 2))
	edges := make([]Edge, 0, n)
	for i := 2; i <= n; i++ {
		edges = append(edges, Edge{Parent: uint64(1 + r.IntN(i-1)), Clock: uint32(1 + r.IntN(4)), Child: uint64(i)})
	}
	f, err := NewForest(edges)
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]Event, 1024)
	for i := range evs {
		evs[i] = ev(uint64(1+r.IntN(n)), uint32(1+r.IntN(5)))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f.Concurrent(evs[i&1023], evs[(i*7+3)&1023])
		i++
	}
}
