package analyze

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIlogThinning feeds rows of many (goroutine, site) pairs, some out of
// order, to the interference log, with a budget that makes it spill, and
// checks its promise: every dropped row t of a pair lies between two kept
// rows k1 ≤ t ≤ k2 of that pair with k2 − k1 ≤ δ, so no window of at
// least δ loses the pair. With thousands of pairs the thinning cache grows
// and evicts.
func TestIlogThinning(t *testing.T) {
	for _, tc := range []struct {
		name         string
		gs, sites, n int
		delta        int64
		budget       int64
	}{
		{"few pairs", 3, 4, 5000, 1000, 1 << 30},
		{"cache grows", 64, 100, 200000, 20000, 1 << 30},
		{"spilled", 64, 100, 200000, 20000, 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			delta := tc.delta
			step := max(2, 12*delta/10*int64(tc.gs*tc.sites)/int64(tc.n)) // a pair's rows about 0.6 δ apart
			rng := rand.New(rand.NewPCG(1, uint64(tc.n)))
			l := newIlog(delta, tc.budget, t.TempDir())
			defer l.close()
			type key struct {
				g    uint64
				site uint32
			}
			in := map[key][]int64{}
			now := int64(0)
			pairs := tc.gs * tc.sites
			for i := range tc.n {
				now += rng.Int64N(step)
				tm := now
				if rng.IntN(50) == 0 {
					tm -= rng.Int64N(2 * delta) // out of order
				}
				// New pairs keep coming during the first half, so that the
				// cache grows while it holds pending rows.
				p := rng.IntN(min(pairs, 1+2*i*pairs/tc.n))
				k := key{uint64(p%tc.gs + 1), uint32(p/tc.gs + 1)}
				in[k] = append(in[k], tm)
				l.row(tm, k.g, k.site)
			}
			if err := l.finish(); err != nil {
				t.Fatal(err)
			}
			if tc.budget < 1<<20 && !l.spilled() {
				t.Fatalf("a budget of %d bytes did not spill", tc.budget)
			}
			out := map[key][]int64{}
			rows := 0
			for gi, g := range l.gs {
				if err := l.scan(uint32(gi), func(tm int64, site uint32) {
					out[key{g, site}] = append(out[key{g, site}], tm)
					rows++
				}); err != nil {
					t.Fatal(err)
				}
			}
			if rows >= tc.n {
				t.Errorf("kept %d of %d rows: nothing thinned", rows, tc.n)
			}
			for k, ts := range in {
				kept := out[k]
				slices.Sort(kept)
				for _, tm := range ts {
					i, found := slices.BinarySearch(kept, tm)
					if found {
						continue
					}
					if i == 0 || i == len(kept) || kept[i]-kept[i-1] > delta {
						t.Fatalf("pair %v: row %d dropped without kept rows within δ around it (kept %v)", k, tm, kept)
					}
				}
			}
		})
	}
}
