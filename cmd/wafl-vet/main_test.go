package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const goMod = "module example.com/vetme\n\ngo 1.22\n"

const buggy = `package vetme

type handler struct{ n int }

func (h *handler) handle() { h.n++ }

type server struct{ h *handler }

// Start starts the loop before the handler it calls is set.
func Start() *server {
	s := &server{}
	go s.loop()
	s.h = &handler{}
	return s
}

func (s *server) loop() { s.h.handle() }
`

const fixed = `package vetme

type handler struct{ n int }

func (h *handler) handle() { h.n++ }

type server struct{ h *handler }

// Start sets the handler, then starts the loop.
func Start() *server {
	s := &server{}
	s.h = &handler{}
	go s.loop()
	return s
}

func (s *server) loop() { s.h.handle() }
`

// TestVetTool builds wafl-vet and runs it as go vet -vettool on a small
// module: the buggy version gets the hint, the fixed one passes.
func TestVetTool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds wafl-vet and runs go vet")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "wafl-vet")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	vet := func(src string) (string, error) {
		dir := t.TempDir()
		for name, text := range map[string]string{"go.mod": goMod, "vetme.go": src} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("go", "vet", "-vettool="+bin, "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := vet(buggy)
	if err == nil {
		t.Fatalf("go vet passed on the buggy module:\n%s", out)
	}
	want := "vetme.go:13:2: possible use-before-init: s.h is set in Start only after the goroutine started at vetme.go:12"
	if !strings.Contains(out, want) {
		t.Fatalf("go vet output lacks %q:\n%s", want, out)
	}
	if out, err := vet(fixed); err != nil {
		t.Fatalf("go vet failed on the fixed module: %v\n%s", err, out)
	}
}
