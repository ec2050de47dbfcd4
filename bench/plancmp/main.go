// Command plancmp compares the plans of two wafl work directories test by
// test: the candidate pairs (kind, ℓ1, ℓ2) of each test's plan. It is how
// bench/scripts/prepcompare.sh shows that preparing a package's tests in one
// process gives the plans of preparing each test alone.
//
// Usage (in bench/): go run ./plancmp [-v] WORKDIR_A WORKDIR_B
//
// It prints one line per test whose candidates differ and a summary; the
// exit status is 0 when every test has the same candidates in both.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memorder/wafl/plans"
)

func main() {
	verbose := flag.Bool("v", false, "list the differing pairs")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: plancmp [-v] WORKDIR_A WORKDIR_B")
		os.Exit(2)
	}
	a, err := load(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "plancmp:", err)
		os.Exit(2)
	}
	b, err := load(flag.Arg(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "plancmp:", err)
		os.Exit(2)
	}
	names := map[string]bool{}
	for k := range a {
		names[k] = true
	}
	for k := range b {
		names[k] = true
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var same, diff, onlyA, onlyB, candA, candB, withCand int
	for _, k := range keys {
		pa, oka := a[k]
		pb, okb := b[k]
		switch {
		case !oka:
			onlyB++
			fmt.Printf("%s: plan only in B (%d candidates)\n", k, len(pb))
			continue
		case !okb:
			onlyA++
			fmt.Printf("%s: plan only in A (%d candidates)\n", k, len(pa))
			continue
		}
		candA += len(pa)
		candB += len(pb)
		if len(pa) > 0 || len(pb) > 0 {
			withCand++
		}
		minus, plus := sub(pa, pb), sub(pb, pa)
		if len(minus) == 0 && len(plus) == 0 {
			same++
			continue
		}
		diff++
		fmt.Printf("%s: A %d, B %d candidates; only in A %d, only in B %d\n", k, len(pa), len(pb), len(minus), len(plus))
		if *verbose {
			for _, p := range minus {
				fmt.Printf("\t- %s\n", p)
			}
			for _, p := range plus {
				fmt.Printf("\t+ %s\n", p)
			}
		}
	}
	fmt.Printf("tests %d: same candidates %d, different %d, plan only in A %d, only in B %d; tests with candidates %d; candidates A %d, B %d\n",
		len(keys), same, diff, onlyA, onlyB, withCand, candA, candB)
	if diff+onlyA+onlyB > 0 {
		os.Exit(1)
	}
}

// load reads every plan under dir/plans: test (package.Test) → its
// candidate pairs.
func load(dir string) (map[string]map[string]bool, error) {
	root := filepath.Join(dir, "plans")
	out := map[string]map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		p, err := plans.Load(path)
		if err != nil {
			return err
		}
		set := map[string]bool{}
		for _, l := range p.Locations {
			for _, pr := range l.Pairs {
				set[fmt.Sprintf("%s %d→%d", pr.Kind, pr.First, pr.Second)] = true
			}
		}
		out[p.Provenance.Package+"."+p.Provenance.Test] = set
		return nil
	})
	return out, err
}

func sub(a, b map[string]bool) []string {
	var d []string
	for k := range a {
		if !b[k] {
			d = append(d, k)
		}
	}
	sort.Strings(d)
	return d
}
