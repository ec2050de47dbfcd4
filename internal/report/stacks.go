package report

import (
	"path/filepath"
	"strings"
)

// generatedFile reports whether path is one of the files the instrumenter
// adds to a package through the build overlay (zz_wafl_helpers.go and the
// like): they are not in the user's tree, so stacks shown to people leave
// their frames out; the frame below is the user's line that called the
// helper.
func generatedFile(path string) bool {
	return strings.HasPrefix(filepath.Base(path), "zz_wafl_")
}

// userStacks returns the crash text without the frames of generated files:
// each frame is a function line followed by a tab-indented file:line line.
func userStacks(text string) string {
	lines := strings.Split(text, "\n")
	out := make([]string, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") && !strings.HasPrefix(lines[i], "\t") {
			file, _, _ := strings.Cut(strings.TrimPrefix(lines[i+1], "\t"), ":")
			if generatedFile(file) {
				i++
				continue
			}
		}
		out = append(out, lines[i])
	}
	return strings.Join(out, "\n")
}

// userGoroutines returns the goroutines without the frames of generated
// files (the slices are copied; gs is not modified).
func userGoroutines(gs []Goroutine) []Goroutine {
	out := make([]Goroutine, len(gs))
	for i, g := range gs {
		g.Frames = append([]Frame(nil), g.Frames...)
		fs := g.Frames[:0]
		for _, f := range g.Frames {
			if !generatedFile(f.File) {
				fs = append(fs, f)
			}
		}
		g.Frames = fs
		out[i] = g
	}
	return out
}
