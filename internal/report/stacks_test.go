package report

import (
	"strings"
	"testing"
)

func TestUserStacks(t *testing.T) {
	text := `panic: close of closed channel

goroutine 7 [running]:
example.com/p._waflClose[...](0x1, 0xc000010000)
	/src/p/zz_wafl_helpers.go:40 +0x25
example.com/p.(*S).Stop(0xc00001)
	/src/p/p.go:12 +0x1d
created by example.com/p.Start in goroutine 6
	/src/p/p.go:20 +0x66
`
	got := userStacks(text)
	if strings.Contains(got, "zz_wafl_helpers.go") || strings.Contains(got, "_waflClose") {
		t.Errorf("generated frame kept:\n%s", got)
	}
	for _, want := range []string{"panic: close of closed channel", "example.com/p.(*S).Stop(0xc00001)\n\t/src/p/p.go:12", "created by example.com/p.Start"} {
		if !strings.Contains(got, want) {
			t.Errorf("lost %q:\n%s", want, got)
		}
	}
	gs := userGoroutines([]Goroutine{{ID: 7, Frames: []Frame{{Func: "example.com/p._waflClose", File: "/src/p/zz_wafl_helpers.go"}, {Func: "example.com/p.(*S).Stop", File: "/src/p/p.go", Line: 12}}}})
	if len(gs[0].Frames) != 1 || gs[0].Frames[0].Line != 12 {
		t.Errorf("goroutine frames: %+v", gs[0].Frames)
	}
}
