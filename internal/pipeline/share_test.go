package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorder/wafl/plans"
)

// sharedSrc has four tests with the same candidate pair (the use in
// pair's goroutine, the dispose after it).
// pairSrc declares pair(): a candidate pair that no delay can expose (the
// dispose waits for the use over a channel). Its file imports "time".
const pairSrc = `
type S struct{ p *int }

func pair() {
	s := &S{p: new(int)}
	ready := make(chan struct{})
	go func() {
		_ = *s.p
		close(ready)
	}()
	time.Sleep(20 * time.Millisecond)
	<-ready
	s.p = nil
}
`

const sharedSrc = `package shared

import (
	"testing"
	"time"
)
` + pairSrc + `
func TestA(t *testing.T) { pair() }
func TestB(t *testing.T) { pair() }
func TestC(t *testing.T) { pair() }
func TestD(t *testing.T) { pair() }
`

// TestSharedPairRotates: of four tests with one pair, each detect call
// delays it in two, and the next call in the two others.
func TestSharedPairRotates(t *testing.T) {
	o, _ := preparedModule(t, "shared", sharedSrc, 4)
	o.TestsPerPair = 2
	runs := func() map[string]int {
		m := map[string]int{}
		for _, name := range []string{"TestA", "TestB", "TestC", "TestD"} {
			p, err := plans.Load(filepath.Join(o.WorkDir, "plans", "example.com", "shared", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			m[name] = len(p.Runs)
		}
		return m
	}
	var out strings.Builder
	o.Stderr = &out
	for call := 1; call <= 2; call++ {
		out.Reset()
		sum, err := Detect(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Problems) != 0 {
			t.Fatalf("detect %d: problems %v", call, sum.Problems)
		}
		if sum.SharedPairs != 1 || sum.SharedOut != 2 || sum.Runs != 2 {
			t.Fatalf("detect %d: %d shared pairs, %d tests left out, %d runs; want 1, 2, 2\n%s", call, sum.SharedPairs, sum.SharedOut, sum.Runs, out.String())
		}
		if !strings.Contains(out.String(), "delayed in 2 other tests of the package (--tests-per-pair)") {
			t.Errorf("detect %d: no test says why it was not delayed:\n%s", call, out.String())
		}
		n := 0
		for _, r := range runs() {
			n += r
		}
		if n != 2*call {
			t.Fatalf("detect %d: plans have %v runs; want %d in all", call, runs(), 2*call)
		}
	}
	for name, r := range runs() {
		if r != 1 {
			t.Errorf("after two calls %s's plan has %d runs; want 1 each (the second call gives the pair to the tests the first left out): %v", name, r, runs())
		}
	}
	// --tests-per-pair 0: every test delays its pairs.
	o.TestsPerPair = 0
	sum, err := Detect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.SharedOut != 0 || sum.Runs != 4 {
		t.Errorf("--tests-per-pair 0: %d tests left out, %d runs; want 0, 4", sum.SharedOut, sum.Runs)
	}
}

func TestSharesView(t *testing.T) {
	p := &plans.Plan{Locations: []plans.Location{
		{Site: 1, Prob: 1, Pairs: []plans.Pair{{Kind: plans.UseAfterDispose, First: 1, Second: 5}, {Kind: plans.UseAfterDispose, First: 1, Second: 6}}},
		{Site: 2, Prob: 1, Pairs: []plans.Pair{{Kind: plans.UseAfterDispose, First: 2, Second: 5}}},
	}}
	j := job{pkg: &pkgBuild{}, test: "TestA"}
	sh := &shares{per: 1, pairs: map[job]map[pairKey]bool{j: {
		{plans.UseAfterDispose, 1, 5}: true,
		{plans.UseAfterDispose, 1, 6}: false,
		{plans.UseAfterDispose, 2, 5}: false,
	}}, held: map[job]int{j: 2}}
	v := sh.view(j, p)
	if got := fmt.Sprint(v.Locations); !strings.Contains(got, "5") || len(v.Locations) != 1 || len(v.Locations[0].Pairs) != 1 || v.Locations[0].Pairs[0].Second != 5 {
		t.Errorf("view: %v; want location 1 with its pair to 5 only", v.Locations)
	}
	if len(p.Locations) != 2 || len(p.Locations[0].Pairs) != 2 {
		t.Errorf("view changed the plan: %v", p.Locations)
	}
	if out, n := sh.out(j); out || n != 2 {
		t.Errorf("out = %v, %d; want false, 2", out, n)
	}
	// A pair the plan gained during the call is its own.
	p.Locations[1].Pairs = append(p.Locations[1].Pairs, plans.Pair{Kind: plans.UseAfterDispose, First: 2, Second: 7})
	if v := sh.view(j, p); len(v.Locations) != 2 || len(v.Locations[1].Pairs) != 1 || v.Locations[1].Pairs[0].Second != 7 {
		t.Errorf("view with a new pair: %v; want location 2 with its pair to 7", v.Locations)
	}
	if v := (*shares)(nil).view(j, p); v != p {
		t.Error("a nil shares changed the plan")
	}
}
