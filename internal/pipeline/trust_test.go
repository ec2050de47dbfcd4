package pipeline

import (
	"fmt"
	"testing"

	"github.com/memorder/wafl/instrument/sites"
	ibuild "github.com/memorder/wafl/internal/build"
	"github.com/memorder/wafl/plans"
)

func TestShardPick(t *testing.T) {
	var jobs []job
	for p := range 3 {
		pb := &pkgBuild{Package: &ibuild.Package{ImportPath: fmt.Sprintf("example.com/p%d", p)}}
		for k := range 5 {
			jobs = append(jobs, job{pb, fmt.Sprintf("Test%d", 4-k)})
		}
	}
	seen := map[string]int{}
	for i := 1; i <= 4; i++ {
		got := Shard{I: i, N: 4}.pick(jobs)
		if len(got) < 3 || len(got) > 4 {
			t.Errorf("shard %d/4 has %d of 15 tests", i, len(got))
		}
		for _, j := range got {
			seen[j.pkg.ImportPath+"."+j.test]++
		}
	}
	if len(seen) != 15 {
		t.Errorf("shards cover %d of 15 tests", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s in %d shards", k, n)
		}
	}
	if got := (Shard{}).pick(jobs); len(got) != 15 {
		t.Errorf("no shard: %d tests", len(got))
	}
	for _, bad := range []string{"0/2", "3/2", "1", "a/b", "1/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if s, err := ParseShard("2/3"); err != nil || s != (Shard{2, 3}) {
		t.Errorf("ParseShard(2/3) = %v, %v", s, err)
	}
}

// TestMapSites: after an edit moved lines, the plan's sites map to the new
// build's sites by file, kind, expression and function; a site that is gone
// drops out with its pairs.
func TestMapSites(t *testing.T) {
	old := &sites.Table{Sites: []sites.Site{
		{ID: 100, Kind: "init", File: "/m/s.go", Line: 17, Expr: "s.h", Func: "(*S).Start"},
		{ID: 200, Kind: "use", File: "/m/s.go", Line: 23, Expr: "s.h", Func: "(*S).loop"},
		{ID: 300, Kind: "use", File: "/m/s.go", Line: 30, Expr: "s.g", Func: "(*S).other"},
	}}
	cur := &sites.Table{Sites: []sites.Site{
		{ID: 111, Kind: "init", File: "/m/s.go", Line: 16, Expr: "s.h", Func: "(*S).Start"},
		{ID: 222, Kind: "use", File: "/m/s.go", Line: 40, Expr: "s.h", Func: "(*S).other"},
		{ID: 223, Kind: "use", File: "/m/s.go", Line: 24, Expr: "s.h", Func: "(*S).loop"},
	}}
	plan := &plans.Plan{
		Locations: []plans.Location{
			{Site: 100, Prob: 1, Pairs: []plans.Pair{{Kind: plans.UseBeforeInit, First: 100, Second: 200, Count: 1}, {Kind: plans.UseBeforeInit, First: 100, Second: 300, Count: 1}}},
			{Site: 300, Prob: 1, Pairs: []plans.Pair{{Kind: plans.UseAfterDispose, First: 300, Second: 100, Count: 1}}},
		},
		Bugs: []plans.Bug{{Kind: plans.UseBeforeInit, Delayed: 100, Failing: 200}},
	}
	m := mapSites(old, cur, plan)
	if m[100] != 111 || m[200] != 223 {
		t.Errorf("map %v, want 100→111, 200→223", m)
	}
	if _, ok := m[300]; ok {
		t.Errorf("site 300 (gone) mapped to %d", m[300])
	}
	plan.Remap(m)
	if len(plan.Locations) != 1 || plan.Locations[0].Site != 111 || len(plan.Locations[0].Pairs) != 1 ||
		plan.Locations[0].Pairs[0].First != 111 || plan.Locations[0].Pairs[0].Second != 223 {
		t.Errorf("remapped plan: %+v", plan.Locations)
	}
	if len(plan.Bugs) != 1 || plan.Bugs[0].Delayed != 111 || plan.Bugs[0].Failing != 223 {
		t.Errorf("remapped bugs: %+v", plan.Bugs)
	}
}
