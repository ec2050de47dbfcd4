package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stealSrc: four tests of one chunk that each sleep 3 s.
const stealSrc = `package steal

import (
	"testing"
	"time"
)

type S struct{ p *int }

func sleepy() {
	s := &S{p: new(int)}
	go func() { _ = *s.p }()
	time.Sleep(3 * time.Second)
	s.p = nil
}

func TestT1(t *testing.T) { sleepy() }
func TestT2(t *testing.T) { sleepy() }
func TestT3(t *testing.T) { sleepy() }
func TestT4(t *testing.T) { sleepy() }
`

// TestChunkGivesTestsAway: a chunk whose test has run stealAfter while a
// CPU is idle and a test or more is still to begin gives the latter half of the tests it has not begun to a chunk of
// their own; its process stops when it begins one of them. Every test is
// prepared once, from a package run, none again alone.
func TestChunkGivesTestsAway(t *testing.T) {
	sum, o := prepareIdle(t, "steal", stealSrc, 4)
	if sum.Prepared != 4 || sum.FailPlain != 0 || sum.Alone != 0 || len(sum.Problems) != 0 {
		t.Fatalf("%d prepared, %d fail plainly, %d again alone, problems %v; want 4, 0, 0, none", sum.Prepared, sum.FailPlain, sum.Alone, sum.Problems)
	}
	logs, err := filepath.Glob(filepath.Join(o.WorkDir, "logs", "example.com", "steal", "_package*.prepare.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Which run passed each test: exactly one.
	passed := map[string][]string{}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "--- PASS: "); ok {
				name, _, _ = strings.Cut(name, " ")
				passed[name] = append(passed[name], filepath.Base(l))
			}
		}
	}
	if len(logs) < 2 {
		t.Fatalf("package runs %v; want the chunk and one it gave tests to", logs)
	}
	for _, name := range []string{"TestT1", "TestT2", "TestT3", "TestT4"} {
		if len(passed[name]) != 1 {
			t.Errorf("%s passed in %v; want one package run", name, passed[name])
		}
	}
	if passed["TestT4"] != nil && passed["TestT1"] != nil && passed["TestT4"][0] == passed["TestT1"][0] {
		t.Errorf("TestT4 ran in the chunk of TestT1 (%s): nothing was given away", passed["TestT1"][0])
	}
}
