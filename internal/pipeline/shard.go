package pipeline

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Shard is one of N parts of the tests (--shard I/N), for spreading
// prepare and detect over the machines of a CI matrix; 'wafl merge'
// combines the shards' work directories. The zero value is all tests.
type Shard struct {
	I, N int // 1 ≤ I ≤ N
}

// ParseShard parses "i/n".
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("--shard %q: want I/N with 1 ≤ I ≤ N, e.g. 2/4", s)
	}
	return Shard{I: i, N: n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// pick returns the shard's jobs: the selected tests sorted by package and
// name, dealt round-robin, so that shards are balanced and every test is
// in exactly one shard, as long as every shard sees the same code, package
// patterns and --run/--skip.
func (s Shard) pick(jobs []job) []job {
	if s.N <= 1 {
		return jobs
	}
	sorted := append([]job(nil), jobs...)
	sort.Slice(sorted, func(a, b int) bool {
		if sorted[a].pkg.ImportPath != sorted[b].pkg.ImportPath {
			return sorted[a].pkg.ImportPath < sorted[b].pkg.ImportPath
		}
		return sorted[a].test < sorted[b].test
	})
	var out []job
	for k, j := range sorted {
		if k%s.N == s.I-1 {
			out = append(out, j)
		}
	}
	return out
}
