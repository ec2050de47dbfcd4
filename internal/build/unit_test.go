package build

import "testing"

func TestWithLang(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"package p\n", "//go:build go1.21\n\n//line /f.go:1:1\npackage p\n"},
		{"//go:build linux || darwin\n\npackage p\n", "//go:build (linux || darwin) && go1.21\n\npackage p\n"},
		{"// +build linux\n\npackage p\n", "//go:build linux && go1.21\n\n//line /f.go:1:1\n//\n\npackage p\n"},
		{"//go:build go1.18\n// +build go1.18\n\npackage p\n", "//go:build go1.18 && go1.21\n//\n\npackage p\n"},
	} {
		if got := string(withLang([]byte(tc.in), "go1.21", "/f.go")); got != tc.want {
			t.Errorf("withLang(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLangLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"1.13", "go1.21", true}, {"1.21.3", "go1.21", false}, {"1.22rc1", "go1.21", false}, {"1.9", "1.10", true},
	} {
		if got := langLess(tc.a, tc.b); got != tc.less {
			t.Errorf("langLess(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

func TestMergeSums(t *testing.T) {
	got := string(mergeSums([]byte("a h1\nb h2"), []byte("b h2\nc h3\n")))
	if got != "a h1\nb h2\nc h3\n" {
		t.Errorf("got %q", got)
	}
}
