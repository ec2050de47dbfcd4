package analyze

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestPairAggWindowManyGoroutines: a pair whose partner accesses come
// from more goroutines than window scans (a test that starts thousands
// of goroutines doing the same thing) keeps the same windows per
// goroutine, in the same order, as one list per goroutine does.
func TestPairAggWindowManyGoroutines(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	agg := &pairAgg{}
	want := map[uint64]*ivList{}
	var order []uint64
	tm := int64(0)
	for range 20000 {
		g := uint64(1 + rng.IntN(500))
		if rng.IntN(3) == 0 {
			g = uint64(1 + rng.IntN(8)) // runs of a few goroutines
		}
		tm += int64(rng.IntN(50))
		iv := interval{tm - int64(rng.IntN(100)), tm}
		agg.window(g, iv)
		if l := want[g]; l != nil {
			l.add(iv)
		} else {
			want[g] = &ivList{cur: iv}
			order = append(order, g)
		}
	}
	if agg.at == nil {
		t.Fatalf("%d goroutines and no index", len(agg.ivs))
	}
	if len(agg.ivs) != len(order) {
		t.Fatalf("%d goroutines' windows, want %d", len(agg.ivs), len(order))
	}
	for i, g := range order {
		if agg.ivs[i].g != g || !reflect.DeepEqual(agg.ivs[i].l, *want[g]) {
			t.Fatalf("goroutine %d (#%d): windows %+v, want %+v", g, i, agg.ivs[i].l, *want[g])
		}
	}
}
