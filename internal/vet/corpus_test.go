package vet_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memorder/wafl/internal/vet"
)

// update rewrites the corpus table of docs/vet.md:
// go test ./internal/vet -run TestCorpus -update.
var update = flag.Bool("update", false, "rewrite the corpus table in docs/vet.md")

// TestCorpus runs wafl vet over the bug corpus (examples/): every buggy
// kernel must get a hint and no fixed twin may.
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the corpus module")
	}
	kernels := corpusKernels(t)
	res, err := vet.Analyze(vet.Options{Dir: "../../examples", Patterns: []string{"./..."}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Errors {
		t.Errorf("corpus package error: %s", e)
	}
	byDir := map[string][]vet.Found{}
	for _, h := range res.Hints {
		byDir[filepath.ToSlash(filepath.Dir(h.File))] = append(byDir[filepath.ToSlash(filepath.Dir(h.File))], h)
	}
	var rows []string
	flagged, twins := 0, 0
	for _, k := range kernels {
		bug, fixed := byDir[k.name], byDir[k.name+"/fixed"]
		why, known := knownMisses[k.name]
		switch {
		case len(bug) == 0 && known:
			t.Logf("%s: not flagged (known: %s)", k.name, why)
		case len(bug) == 0:
			t.Errorf("%s: no hint on the buggy kernel", k.name)
		case known:
			t.Errorf("%s: flagged now: take it out of knownMisses", k.name)
		default:
			flagged++
		}
		if len(fixed) > 0 {
			twins++
			t.Errorf("%s/fixed: %d hints on the fixed twin, first: %s: %s", k.name, len(fixed), fixed[0].Pos, fixed[0].Message)
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %s | %s |", k.name, k.kind, yesNo(len(bug)), yesNo(len(fixed)), kinds(bug)))
	}
	for dir := range byDir {
		if _, ok := kernelOf(kernels, dir); !ok {
			t.Errorf("%s: hints outside the corpus kernels", dir)
		}
	}
	table := fmt.Sprintf("| kernel | kind (corpus) | buggy flagged | fixed twin flagged | hints on the buggy kernel |\n|---|---|---|---|---|\n%s\n\n"+
		"%d of %d buggy kernels flagged, %d of %d fixed twins flagged; %d hints in all.\n",
		strings.Join(rows, "\n"), flagged, len(kernels), twins, len(kernels), len(res.Hints))
	t.Logf("\n%s", table)
	if *update {
		rewriteBetween(t, "../../docs/vet.md", "<!-- corpus table: go test ./internal/vet -run TestCorpus -update -->", "<!-- end corpus table -->", table)
	}
}

// knownMisses are the kernels the analyzer does not flag yet, with why.
var knownMisses = map[string]string{}

type kernel struct{ name, kind string }

// corpusKernels lists the kernels of examples/: every directory with Go
// files directly under it, its fixed twin in fixed/. The kind comes from
// bench/scripts/corpus.tsv when the kernel is listed there.
func corpusKernels(t *testing.T) []kernel {
	kinds := map[string]string{}
	var order []string
	if f, err := os.Open("../../bench/scripts/corpus.tsv"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			cols := strings.Split(line, "\t")
			if len(cols) < 4 {
				t.Fatalf("corpus.tsv: short line %q", line)
			}
			kinds[cols[0]] = cols[3]
			order = append(order, cols[0])
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		gofiles, _ := filepath.Glob(filepath.Join("../../examples", e.Name(), "*.go"))
		if len(gofiles) > 0 {
			dirs[e.Name()] = true
		}
	}
	var out []kernel
	for _, name := range order {
		if dirs[name] {
			out = append(out, kernel{name: name, kind: kinds[name]})
			delete(dirs, name)
		} else {
			t.Errorf("corpus.tsv lists %s, which examples/ does not have", name)
		}
	}
	var rest []string
	for name := range dirs {
		rest = append(rest, name)
	}
	sort.Strings(rest)
	for _, name := range rest {
		out = append(out, kernel{name: name, kind: "(not in corpus.tsv)"})
	}
	if len(out) == 0 {
		t.Fatal("no kernels in examples/")
	}
	return out
}

func kernelOf(ks []kernel, dir string) (kernel, bool) {
	for _, k := range ks {
		if dir == k.name || dir == k.name+"/fixed" {
			return k, true
		}
	}
	return kernel{}, false
}

func yesNo(n int) string {
	if n == 0 {
		return "no"
	}
	return "**yes**"
}

func kinds(hs []vet.Found) string {
	n := map[string]int{}
	for _, h := range hs {
		n[h.Kind]++
	}
	var ks []string
	for k, c := range n {
		ks = append(ks, fmt.Sprintf("%s ×%d", k, c))
	}
	sort.Strings(ks)
	if len(ks) == 0 {
		return "–"
	}
	return strings.Join(ks, ", ")
}

// rewriteBetween replaces the text between two marker lines of a file.
func rewriteBetween(t *testing.T, path, begin, end, text string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(begin))
	j := bytes.Index(data, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s: markers %q and %q not found", path, begin, end)
	}
	var out bytes.Buffer
	out.Write(data[:i+len(begin)])
	out.WriteString("\n")
	out.WriteString(text)
	out.Write(data[j:])
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
