package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestTranslateGoTestFlags(t *testing.T) {
	for _, c := range []struct {
		in, want []string
		err      string
	}{
		{in: []string{"detect", "-count", "2", "./..."}, want: []string{"detect", "--runs=2", "./..."}},
		{in: []string{"detect", "-count=3", "-short", "-cpu", "1,2", "./..."}, want: []string{"detect", "--runs=3", "--short", "--cpu", "1,2", "./..."}},
		{in: []string{"prepare", "-run", "TestX", "-timeout=1m", "-v", "-p", "2"}, want: []string{"prepare", "--run", "TestX", "--timeout=1m", "--verbose", "--parallel", "2"}},
		{in: []string{"reproduce", "-n", "5", "r.json"}, want: []string{"reproduce", "-n", "5", "r.json"}},
		{in: []string{"-C", "dir", "detect"}, want: []string{"--chdir", "dir", "detect"}},
		{in: []string{"detect", "-test.short", "--", "-race"}, want: []string{"detect", "--short", "--", "-race"}},
		{in: []string{"prepare", "-count", "2"}, err: "not supported: -count"},
		{in: []string{"detect", "-race", "./..."}, err: "not supported: -race (wafl builds its own"},
		{in: []string{"detect", "-coverprofile=c.out"}, err: "not supported: -coverprofile"},
		{in: []string{"detect", "-json", "./..."}, err: "not supported: -json (go test's test2json stream; wafl's --json"},
		{in: []string{"detect", "-parallel", "4"}, err: "not supported: -parallel"},
		{in: []string{"detect", "-x"}, err: "not supported: -x"},
		{in: []string{"detect", "-n"}, err: "not supported: -n"},
		{in: []string{"detect", "-failfast"}, err: "not supported: -failfast (wafl runs every selected test"},
		{in: []string{"detect", "-runs", "3"}, err: "unknown flag -runs (wafl's own flags take two dashes: --runs"},
	} {
		got, err := translateGoTestFlags(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestGoTestFlagsComplete keeps goTestFlags in step with the go command
// it copies: every flag 'go help test', 'go help testflag' and 'go help
// build' list, and every -test.* flag of a real test binary, has an entry;
// every flag the table maps onto is one of wafl's.
func TestGoTestFlagsComplete(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	var names []string
	flagLine := regexp.MustCompile(`(?m)^\s+-([a-zA-Z][a-zA-Z0-9.]*)`)
	for _, topic := range []string{"test", "testflag", "build"} {
		out, err := exec.Command("go", "help", topic).Output()
		if err != nil {
			t.Fatalf("go help %s: %v", topic, err)
		}
		for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
			names = append(names, m[1])
		}
	}
	dir := t.TempDir()
	for name, data := range map[string]string{
		"go.mod":    "module example.com/tf\n\ngo 1.22\n",
		"x_test.go": "package tf\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "tf.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	help, _ := exec.Command(bin, "-h").CombinedOutput() // -h exits 2
	binFlags := regexp.MustCompile(`(?m)^\s+-test\.([a-z0-9]+)`).FindAllStringSubmatch(string(help), -1)
	if len(binFlags) < 20 {
		t.Fatalf("%s -h listed %d -test.* flags:\n%s", bin, len(binFlags), help)
	}
	for _, m := range binFlags {
		names = append(names, m[1])
	}
	for _, n := range names {
		if _, ok := goTestFlags[n]; !ok {
			t.Errorf("go test flag -%s has no entry in goTestFlags: map it onto a wafl flag or say why it is not supported", n)
		}
	}
	root := newRoot(nil, nil)
	for name, repl := range goTestFlags {
		if !strings.HasPrefix(repl, "--") {
			continue
		}
		flag := strings.TrimPrefix(repl, "--")
		found := root.PersistentFlags().Lookup(flag) != nil
		for _, c := range root.Commands() {
			found = found || c.Flags().Lookup(flag) != nil
		}
		if !found {
			t.Errorf("goTestFlags maps -%s onto %s, which no wafl command has", name, repl)
		}
	}
}
