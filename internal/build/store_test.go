package build

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestEmbedPatterns(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{" a.txt  b/*.tmpl", []string{"a.txt", "b/*.tmpl"}},
		{`"x y.txt" c`, []string{"x y.txt", "c"}},
		{"`raw dir` all:d", []string{"raw dir", "all:d"}},
		{`"a\"b" e`, []string{`a"b`, "e"}},
		{"", nil},
	} {
		if got := embedPatterns(c.in); !slices.Equal(got, c.want) {
			t.Errorf("embedPatterns(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTrimStoreKeepsRecent(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-3 * time.Hour)
	for i, name := range []string{"e0", "e1", "e2", "tmp-x", "e3"} {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		at := old.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(dir, at, at); err != nil {
			t.Fatal(err)
		}
	}
	trimStore(root, 2)
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"e2", "e3"}; !slices.Equal(names, want) {
		t.Fatalf("left %v, want %v (the two most recent; the old temporary directory gone)", names, want)
	}
}
