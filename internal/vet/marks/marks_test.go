package marks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/memorder/wafl/internal/vet"
)

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func hint(file string, a, b int, related ...int) vet.Found {
	h := vet.Found{Abs: file, Line: a, Pair: []vet.Related{{Abs: file, Line: a}, {Abs: file, Line: b}}}
	for _, r := range related {
		h.Related = append(h.Related, vet.Related{Abs: file, Line: r})
	}
	return h
}

// TestMark builds a work directory with one bug report and one plan and
// checks the three marks.
func TestMark(t *testing.T) {
	dir := t.TempDir()
	src := "/src/p/p.go"
	writeJSON(t, filepath.Join(dir, "reports/example.com/p/TestA.json"), map[string]any{
		"version": 1,
		"bugs": []any{map[string]any{
			"kind":    "use-after-dispose",
			"delayed": map[string]any{"file": src, "line": 40},
			"failing": map[string]any{"file": src, "line": 40},
			"partner": map[string]any{"file": src, "line": 61},
		}},
	})
	// A report's own plan copy is no plan of the directory.
	writeJSON(t, filepath.Join(dir, "reports/example.com/p/TestA.run1-seed1.plan.json"), map[string]any{})
	sites := filepath.Join(dir, "bin/example.com/p.sites.json")
	writeJSON(t, sites, map[string]any{"version": 1, "sites": []any{
		map[string]any{"id": 1, "file": src, "line": 10},
		map[string]any{"id": 2, "file": src, "line": 20},
		map[string]any{"id": 3, "file": src, "line": 30},
	}})
	writeJSON(t, filepath.Join(dir, "plans/example.com/p/TestB.json"), map[string]any{
		"version":    1,
		"provenance": map[string]any{"sites": sites},
		"locations": []any{map[string]any{"site": 1, "pairs": []any{
			map[string]any{"kind": "use-before-init", "first": 1, "second": 2},
		}}},
	})
	ix, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	hints := []vet.Found{
		hint(src, 61, 40),     // the report's dispose and use
		hint(src, 61, 45, 40), // one pair position and a related one
		hint(src, 10, 20),     // both sides paired in a plan
		hint(src, 10, 30),     // only one side reached
	}
	ix.Mark(hints)
	want := []string{Confirmed, Confirmed, Exercised, Untested}
	for i, h := range hints {
		if h.Mark != want[i] {
			t.Errorf("hint %d: mark %q, want %q", i, h.Mark, want[i])
		}
	}
	if hints[0].Report == "" {
		t.Error("confirmed hint names no report")
	}
}

func TestWorkDir(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := WorkDir("", sub); got != "" {
		t.Errorf("no .wafl: WorkDir = %q, want none", got)
	}
	if err := os.Mkdir(filepath.Join(root, ".wafl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := WorkDir("", sub); got != filepath.Join(root, ".wafl") {
		t.Errorf("WorkDir = %q, want %s", got, filepath.Join(root, ".wafl"))
	}
	if got := WorkDir("/elsewhere", sub); got != "/elsewhere" {
		t.Errorf("--dir: WorkDir = %q", got)
	}
}
