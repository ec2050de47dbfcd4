package pipeline

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
	"github.com/memorder/wafl/plans"
)

// Runs of some subtests (docs/algorithm.md): a test's preparation run
// marks each subtest's goroutine (hook.Subtest), the conversion of its
// trace says which first-level subtests reached which sites
// (trace.Subtests), and the plan keeps it with the subtests' names
// (plans.Subtests); a detection run then takes only the subtests its
// pairs need (plans.Plan.SubtestPattern), and the whole test once such a
// run reaches none of the plan's delay locations.

// maxSubtests bounds the first-level subtests a plan names.
const maxSubtests = 256

// ranSubtests says whether the run with output runLog ran a subtest of
// test: only then does the conversion of its trace work out which
// subtest reached which site (a lookup per goroutine switch in the spill
// file, and per goroutine once the file is read).
// The tests with subtests of a log are read once and kept (package runs
// share one log among their tests).
func ranSubtests(runLog, test string) bool {
	if runLog == "" {
		return false
	}
	fi, err := os.Stat(runLog)
	if err != nil {
		return false
	}
	key := subtestLogKey{runLog, fi.Size(), fi.ModTime().UnixNano()}
	if v, ok := subtestLogs.Load(key); ok {
		return v.(map[string]bool)[test]
	}
	with := map[string]bool{}
	f, err := os.Open(runLog)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "=== RUN   "); ok {
			if top, _, sub := strings.Cut(name, "/"); sub {
				with[top] = true
			}
		}
	}
	if sc.Err() != nil {
		// A line too long to read: assume subtests, as the conversion
		// did before this check.
		return true
	}
	subtestLogs.Store(key, with)
	return with[test]
}

// subtestLogKey is a run log as ranSubtests read it.
type subtestLogKey struct {
	path        string
	size, mtime int64
}

// subtestLogs are the tests with subtests of each run log read, by
// subtestLogKey.
var subtestLogs sync.Map

// subtestsOf returns the plan's record of the subtests of test that the
// run with output runLog ran (go test -v: "=== RUN   TestX/name" for
// every subtest), from the subtests the trace's conversion found. It
// returns nil unless every subtest the output names was marked, itself
// or a first-level subtest above it: a subtest function wafl did not
// instrument (a function declared in another package, say) has no mark,
// and its sites would pass for the test's own.
func subtestsOf(subs *trace.Subtests, test, runLog string) *plans.Subtests {
	if len(subs.IDs) == 0 || len(subs.IDs) > maxSubtests {
		return nil
	}
	f, err := os.Open(runLog)
	if err != nil {
		return nil
	}
	defer f.Close()
	want := make(map[uint64]int, len(subs.IDs))
	for i, id := range subs.IDs {
		want[id] = i
	}
	names := make([]string, len(subs.IDs))
	var ran []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	prefix := "=== RUN   " + test + "/"
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		name := strings.TrimPrefix(line, "=== RUN   ")
		if i, ok := want[abi.TestID(name)]; ok {
			names[i] = name
		}
		ran = append(ran, name)
	}
	if sc.Err() != nil {
		return nil
	}
	for _, n := range names {
		if n == "" {
			return nil // a mark whose subtest the output does not name
		}
	}
	for _, r := range ran {
		covered := false
		for _, n := range names {
			if r == n || strings.HasPrefix(r, n+"/") {
				covered = true
				break
			}
		}
		if !covered {
			return nil
		}
	}
	st := &plans.Subtests{Count: len(names)}
	per := make([][]uint32, len(names))
	for site, l := range subs.Sites {
		if subs.Outside[site] {
			continue // every run reaches it
		}
		for _, i := range l {
			per[i] = append(per[i], site)
		}
	}
	for i, n := range names {
		if len(per[i]) == 0 {
			continue
		}
		slices.Sort(per[i])
		st.List = append(st.List, plans.Subtest{Name: n, Sites: per[i]})
	}
	for site := range subs.Outside {
		st.Outside = append(st.Outside, site)
	}
	slices.Sort(st.Outside)
	return st
}
