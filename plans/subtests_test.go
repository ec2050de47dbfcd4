package plans

import (
	"regexp"
	"strings"
	"testing"
)

// matches reports whether go test's -run pattern "^TestX$/"+sub selects
// the subtest name (a full name), as the testing package matches: element
// by element, elements beyond the pattern's matching anything.
func matches(t *testing.T, sub, name string) bool {
	t.Helper()
	pat := strings.Split(sub, "/")
	elems := strings.Split(name, "/")[1:]
	for i, e := range elems {
		if i >= len(pat) {
			return true
		}
		if !regexp.MustCompile(pat[i]).MatchString(e) {
			return false
		}
	}
	return true
}

func subtestPlan(st *Subtests, pairs ...[2]uint32) *Plan {
	p := &Plan{Subtests: st}
	for _, pr := range pairs {
		p.Locations = append(p.Locations, Location{Site: pr[0], Prob: 1, Pairs: []Pair{{Kind: UseBeforeInit, First: pr[0], Second: pr[1]}}})
	}
	return p
}

func TestSubtestPattern(t *testing.T) {
	// 24 alike cases, each reaching sites 1, 2 and 3; case 5 also 4.
	st := &Subtests{Count: 24, Outside: []uint32{9}}
	for i := range 24 {
		s := Subtest{Name: "TestRestore/case_" + string(rune('a'+i)) + "_|_new:_true", Sites: []uint32{1, 2, 3}}
		if i == 5 {
			s.Sites = append(s.Sites, 4)
		}
		st.List = append(st.List, s)
	}
	for _, c := range []struct {
		name  string
		plan  *Plan
		want  []string // subtests the pattern must select; nil: the whole test
		wantN int      // at most this many of the list selected
	}{
		{"one case takes every pair", subtestPlan(st, [2]uint32{1, 2}, [2]uint32{2, 3}, [2]uint32{1, 9}), []string{"TestRestore/case_a_|_new:_true"}, 1},
		{"the case with the rarer site", subtestPlan(st, [2]uint32{1, 2}, [2]uint32{4, 3}), []string{"TestRestore/case_f_|_new:_true"}, 1},
		{"sites outside or never reached need no subtest", subtestPlan(st, [2]uint32{9, 77}), nil, 0},
	} {
		sub := c.plan.SubtestPattern()
		if c.want == nil {
			if sub != "" {
				t.Errorf("%s: pattern %q, want the whole test", c.name, sub)
			}
			continue
		}
		n := 0
		for _, s := range st.List {
			if matches(t, sub, s.Name) {
				n++
			}
		}
		for _, w := range c.want {
			if !matches(t, sub, w) {
				t.Errorf("%s: pattern %q does not select %s", c.name, sub, w)
			}
		}
		if n > c.wantN {
			t.Errorf("%s: pattern %q selects %d subtests, want at most %d", c.name, sub, n, c.wantN)
		}
	}

	// Sites only reached in different subtests (parallel subtests on a
	// shared value): one of each.
	two := &Subtests{Count: 3, List: []Subtest{{Name: "TestP/w", Sites: []uint32{1}}, {Name: "TestP/r", Sites: []uint32{2}}, {Name: "TestP/x", Sites: []uint32{5}}}}
	sub := subtestPlan(two, [2]uint32{1, 2}).SubtestPattern()
	if !matches(t, sub, "TestP/w") || !matches(t, sub, "TestP/r") || matches(t, sub, "TestP/x") {
		t.Errorf("pattern %q: want w and r, not x", sub)
	}
	// Every subtest needed, Whole set, a pruned pair, a dead location:
	// the whole test.
	if sub := subtestPlan(two, [2]uint32{1, 2}, [2]uint32{5, 1}).SubtestPattern(); sub != "" {
		t.Errorf("all subtests needed: pattern %q, want the whole test", sub)
	}
	whole := *two
	whole.Whole = true
	if sub := subtestPlan(&whole, [2]uint32{1, 1}).SubtestPattern(); sub != "" {
		t.Errorf("Whole: pattern %q", sub)
	}
	p := subtestPlan(two, [2]uint32{1, 1}, [2]uint32{5, 5})
	p.Locations[1].Pairs[0].Pruned = "hb"
	if sub := p.SubtestPattern(); !matches(t, sub, "TestP/w") || matches(t, sub, "TestP/x") {
		t.Errorf("pruned pair: pattern %q, want w only", sub)
	}
	if sub := (&Plan{}).SubtestPattern(); sub != "" {
		t.Errorf("no subtests: %q", sub)
	}
}

// TestSubtestRun: names with slashes of their own, regexp characters and
// different depths.
func TestSubtestRun(t *testing.T) {
	for _, c := range []struct {
		names      []string
		want, not  []string
		wantString string
	}{
		{names: []string{"TestS/watch/remove", "TestS/watch/rename"}, want: []string{"TestS/watch/remove", "TestS/watch/rename", "TestS/watch/remove/deeper"}, not: []string{"TestS/watch/create", "TestS/other/remove"}},
		{names: []string{"TestS/a.b(c)", "TestS/x/y"}, want: []string{"TestS/a.b(c)", "TestS/a.b(c)/nested", "TestS/x/y"}, not: []string{"TestS/aXb(c)", "TestS/z"}},
		{names: []string{"TestS/case_1#01"}, want: []string{"TestS/case_1#01"}, not: []string{"TestS/case_1"}, wantString: "^(?:case_1#01)$"},
	} {
		sub := subtestRun(c.names)
		if c.wantString != "" && sub != c.wantString {
			t.Errorf("%v: %q, want %q", c.names, sub, c.wantString)
		}
		for _, w := range c.want {
			if !matches(t, sub, w) {
				t.Errorf("%v: pattern %q does not select %s", c.names, sub, w)
			}
		}
		for _, n := range c.not {
			if matches(t, sub, n) {
				t.Errorf("%v: pattern %q selects %s", c.names, sub, n)
			}
		}
	}
}

// TestRunWholeTest: a plan falls back to the whole test only while no run
// of some subtests has delayed.
func TestRunWholeTest(t *testing.T) {
	if (&Plan{}).RunWholeTest() {
		t.Error("a plan without subtests fell back")
	}
	p := &Plan{Subtests: &Subtests{Count: 2}, Runs: []Run{{N: 1, Sub: "^(?:a)$"}}}
	if !p.RunWholeTest() || !p.Subtests.Whole {
		t.Error("no run of some subtests delayed: want the whole test")
	}
	p = &Plan{Subtests: &Subtests{Count: 2}, Runs: []Run{{N: 1, Sub: "^(?:a)$", Delays: 3}, {N: 2, Sub: "^(?:a)$"}}}
	if p.RunWholeTest() || p.Subtests.Whole {
		t.Error("run 1 of subtest a delayed, run 2 reached nothing: want the subtests kept")
	}
	p = &Plan{Subtests: &Subtests{Count: 2}, Runs: []Run{{N: 1, Delays: 3}, {N: 2, Sub: "^(?:a)$"}}}
	if !p.RunWholeTest() {
		t.Error("only a run of the whole test delayed: want the whole test")
	}
}

// TestRunWholeTestAfterFailure: a failed run of some subtests makes the
// plan take the whole test, also after runs of some subtests delayed,
// unless one of them passed; and it says so only once.
func TestRunWholeTestAfterFailure(t *testing.T) {
	if (&Plan{}).RunWholeTestAfterFailure() {
		t.Error("a plan without subtests fell back")
	}
	p := &Plan{Subtests: &Subtests{Count: 2}, Runs: []Run{{N: 1, Sub: "^(?:a)$", Delays: 3, Outcome: "fail"}, {N: 2, Sub: "^(?:a)$", Delays: 1, Outcome: "fail"}}}
	if !p.RunWholeTestAfterFailure() || !p.Subtests.Whole || p.SubtestPattern() != "" {
		t.Error("runs of some subtests failed: want the whole test")
	}
	if p.RunWholeTestAfterFailure() {
		t.Error("a plan that takes the whole test already fell back again")
	}
	p = &Plan{Subtests: &Subtests{Count: 2}, Runs: []Run{{N: 1, Sub: "^(?:a)$", Delays: 3, Outcome: "pass"}, {N: 2, Sub: "^(?:a)$", Delays: 1, Outcome: "fail"}}}
	if p.RunWholeTestAfterFailure() || p.Subtests.Whole {
		t.Error("run 1 of subtest a passed, run 2 failed: want the subtests kept (the failure is the delays')")
	}
}
