package trace

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

func TestPausesRemove(t *testing.T) {
	// Two overlapping delays (10–20, 15–30) count once, 15 ns; 50–60 is
	// another 10; an empty and a reversed interval are ignored.
	p := NewPauses([][2]int64{{50, 60}, {15, 30}, {10, 20}, {40, 40}, {70, 65}})
	if got := p.Total(); got != 30 {
		t.Fatalf("Total = %d, want 30", got)
	}
	for _, c := range []struct{ t, want int64 }{
		{0, 0}, {9, 9}, {10, 10}, {12, 10}, {29, 10}, {30, 10}, {31, 11},
		{49, 29}, {50, 30}, {55, 30}, {60, 30}, {100, 70},
	} {
		if got := p.Remove(c.t); got != c.want {
			t.Errorf("Remove(%d) = %d, want %d", c.t, got, c.want)
		}
	}
	var nilp *Pauses
	if nilp.Remove(42) != 42 || nilp.Total() != 0 {
		t.Fatal("nil Pauses changed a time")
	}
	if NewPauses([][2]int64{{5, 5}}) != nil {
		t.Fatal("no interval left, want nil")
	}
}

// Remove keeps the order of times (a goroutine's events stay in order)
// and never moves a time by more than the pauses before it.
func TestPausesRemoveMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var iv [][2]int64
	for range 200 {
		s := r.Int64N(1_000_000)
		iv = append(iv, [2]int64{s, s + r.Int64N(5000)})
	}
	p := NewPauses(iv)
	prev := int64(-1)
	for x := int64(0); x < 1_100_000; x += 37 {
		y := p.Remove(x)
		if y < prev || y > x || x-y > p.Total() {
			t.Fatalf("Remove(%d) = %d after %d (total %d)", x, y, prev, p.Total())
		}
		prev = y
	}
}

func TestConvertWithout(t *testing.T) {
	dir := t.TempDir()
	b := &Batch{}
	// Goroutine 1 at 100 and 5_000_100 (after a 5 ms delay from 200),
	// goroutine 2 at 5_000_000.
	b.Append(100, 1, 1, 7, 0x10, 1)
	b.Append(5_000_100, 1, 2, 7, 0x10, 1)
	b.Append(5_000_000, 2, 1, 8, 0x10, 2)
	raw, out := filepath.Join(dir, "t.raw"), filepath.Join(dir, "t.arrows")
	writeRaw(t, raw, b)
	p := NewPauses([][2]int64{{200, 5_000_200}})
	if _, err := ConvertWithout(raw, out, testMeta, p); err != nil {
		t.Fatal(err)
	}
	got, _ := readTraceFile(t, out)
	want := []int64{100, 200, 200}
	for i, w := range want {
		if got.Time[i] != w {
			t.Fatalf("times %v, want %v", got.Time, want)
		}
	}
}
