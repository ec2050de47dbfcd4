package pipeline

import (
	"context"
	"errors"
	"fmt"
	ibuild "github.com/memorder/wafl/internal/build"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memorder/wafl/internal/pipeline/testrun"
)

func TestForEachRunsEveryJobOnce(t *testing.T) {
	jobs := make([]int, 100)
	for i := range jobs {
		jobs[i] = i
	}
	var seen [100]atomic.Int32
	if err := forEach(context.Background(), 4, jobs, func(j int) { seen[j].Add(1) }); err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Errorf("job %d ran %d times", i, n)
		}
	}
}

func TestForEachStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	err := forEach(ctx, 1, make([]int, 50), func(int) {
		if ran.Add(1) == 3 {
			cancel()
		}
	})
	if err == nil {
		t.Fatal("forEach returned nil after cancel")
	}
	if n := ran.Load(); n > 5 {
		t.Errorf("%d jobs ran after cancel", n)
	}
}

// TestClassify: a plain error is the workflow's phase and "error"; a
// testError says its own; detect's not-prepared wrapping keeps prepare's
// phase and reason.
func TestClassify(t *testing.T) {
	plain := errors.New("boom")
	if phase, note := classify(plain, "detect"); phase != "detect" || note != "error" {
		t.Errorf("plain: %s, %s", phase, note)
	}
	analysis := fmt.Errorf("wrapped: %w", &testError{phase: "analyze", note: "analysis failed", err: plain})
	if phase, note := classify(analysis, "prepare"); phase != "analyze" || note != "analysis failed" {
		t.Errorf("analysis: %s, %s", phase, note)
	}
	np := notPrepared(&testError{note: "timeout", err: plain})
	if phase, note := classify(np, "detect"); phase != "prepare" || note != "not prepared: timeout" ||
		np.Error() != "boom" || !errors.Is(np, plain) {
		t.Errorf("not prepared: %s, %s, %q", phase, note, np)
	}
}

func TestSubtestPatternsReachTheBinary(t *testing.T) {
	o := &Tests{Run: "TestSub/a", Skip: "TestSub/b"}
	sub, skip := o.subtestArgs()
	r := testrun.Run{Test: "TestSub", Sub: sub, Skip: skip}
	got := strings.Join(r.Args(), " ")
	want := "-test.run ^TestSub$/a -test.count 1 -test.v -test.skip TestSub/b"
	if got != want {
		t.Errorf("args = %q, want %q", got, want)
	}
	// A top-level --skip filters the list instead.
	if _, skip := (&Tests{Skip: "TestX"}).subtestArgs(); skip != "" {
		t.Errorf("top-level skip passed to the binary: %q", skip)
	}
}

// TestByPackage: the tests of one package form one group, run one after
// another; groups are ordered largest first.
func TestByPackage(t *testing.T) {
	a := &pkgBuild{Package: &ibuild.Package{ImportPath: "example.com/a"}}
	b := &pkgBuild{Package: &ibuild.Package{ImportPath: "example.com/b"}}
	jobs := []job{{pkg: a, test: "TestA1"}, {pkg: b, test: "TestB1"}, {pkg: b, test: "TestB2"}, {pkg: a, test: "TestA2"}, {pkg: b, test: "TestB3"}}
	var got []string
	for _, g := range byPackage(jobs) {
		var names []string
		for _, j := range g {
			if j.pkg != g[0].pkg {
				t.Fatalf("group mixes packages: %v", g)
			}
			names = append(names, j.test)
		}
		got = append(got, strings.Join(names, ","))
	}
	if want := []string{"TestB1,TestB2,TestB3", "TestA1,TestA2"}; !slices.Equal(got, want) {
		t.Errorf("byPackage = %q, want %q", got, want)
	}
}
