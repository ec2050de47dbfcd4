package golangci_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The tools the analyzer is run in, built at these versions (the newest
// the module proxy serves that build with this Go). gopls pins the
// golang.org/x/tools it was released with: its internal packages follow
// that version, so the build uses it for the analyzer as well.
const (
	goplsVersion        = "v0.23.0"
	goplsTools          = "v0.47.1-0.20260707181000-a299dadba899"
	golangciLintVersion = "v2.15.0"
)

// hint matches a diagnostic of the memorder analyzer in a tool's output.
var hint = regexp.MustCompile(`(?m)^(\S+\.go):(\d+):\d+: possible (use-after-dispose|use-before-init|double close|send on closed channel|WaitGroup misuse): `)

// TestGopls builds gopls with the memorder analyzer among its analyzers
// (gopls has no way to load one: the build adds a file to its settings
// package, as a fork would) and runs `gopls check` on a buggy kernel of
// examples/ and on its fixed twin: the editor shows the hint on the first
// and nothing on the second.
func TestGopls(t *testing.T) {
	src := moduleCopy(t, "golang.org/x/tools/gopls", goplsVersion)
	write(t, filepath.Join(src, "internal", "settings", "wafl_memorder.go"), `package settings

import "github.com/memorder/wafl/golangci"

func init() {
	p, err := golangci.New(nil)
	if err != nil {
		panic(err)
	}
	as, err := p.BuildAnalyzers()
	if err != nil {
		panic(err)
	}
	for _, a := range as {
		AllAnalyzers = append(AllAnalyzers, &Analyzer{analyzer: a})
	}
}
`)
	gopls := buildTool(t, src, ".", "golang.org/x/tools="+"golang.org/x/tools@"+goplsTools)
	examples := filepath.Join(repoRoot(t), "examples")
	for _, c := range []struct {
		dir  string
		want bool
	}{{"deletingmap", true}, {"deletingmap/fixed", false}, {"lateserve", true}, {"lateserve/fixed", false}} {
		files, err := filepath.Glob(filepath.Join(examples, c.dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", c.dir, err)
		}
		cmd := exec.Command(gopls, append([]string{"check"}, files...)...)
		cmd.Dir = examples
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gopls check %s: %v\n%s", c.dir, err, out)
		}
		checkHints(t, "gopls check "+c.dir, out, c.want)
	}
}

// TestGolangciLint builds golangci-lint with the plugin the way
// `golangci-lint custom` does (a blank import of this package in its
// main package) and runs it with memorder enabled as a module plugin on
// a buggy kernel of examples/ and on its fixed twin.
func TestGolangciLint(t *testing.T) {
	src := moduleCopy(t, "github.com/golangci/golangci-lint/v2", golangciLintVersion)
	write(t, filepath.Join(src, "cmd", "golangci-lint", "plugin_wafl.go"),
		"package main\n\nimport _ \"github.com/memorder/wafl/golangci\"\n")
	lint := buildTool(t, src, "./cmd/golangci-lint")
	config := filepath.Join(t.TempDir(), ".golangci.yml")
	write(t, config, `version: "2"
linters:
  default: none
  enable:
    - memorder
  settings:
    custom:
      memorder:
        type: module
        description: goroutine order bugs
`)
	examples := filepath.Join(repoRoot(t), "examples")
	for _, c := range []struct {
		dir  string
		want bool
	}{{"./deletingmap", true}, {"./deletingmap/fixed", false}} {
		cmd := exec.Command(lint, "run", "--config", config, "--output.text.path", "stdout", c.dir)
		cmd.Dir = examples
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOLANGCI_LINT_CACHE="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		// golangci-lint exits 1 when it reports issues.
		if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1 && c.want) {
			t.Fatalf("golangci-lint run %s: %v\n%s%s", c.dir, err, stdout.Bytes(), stderr.Bytes())
		}
		checkHints(t, "golangci-lint run "+c.dir, stdout.Bytes(), c.want)
		if c.want && !strings.Contains(stdout.String(), "(memorder)") {
			t.Errorf("golangci-lint run %s: hints not attributed to memorder:\n%s", c.dir, stdout.Bytes())
		}
	}
}

// checkHints fails unless out holds a memorder hint (want) or none.
func checkHints(t *testing.T, what string, out []byte, want bool) {
	t.Helper()
	got := hint.FindAll(out, -1)
	switch {
	case want && len(got) == 0:
		t.Errorf("%s: no memorder hint in the output:\n%s", what, out)
	case !want && len(got) > 0:
		t.Errorf("%s: hints on a fixed twin:\n%s", what, out)
	default:
		t.Logf("%s: %d hint(s)", what, len(got))
	}
}

// moduleCopy downloads mod@version through the module proxy and returns
// a writable copy of it in a temporary directory (the go command refuses
// to build with files added beneath the module cache). Without the proxy
// the test is skipped.
func moduleCopy(t *testing.T, mod, version string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: builds %s@%s", mod, version)
	}
	cmd := exec.Command("go", "mod", "download", "-json", mod+"@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Error != "" || info.Dir == "" {
		t.Skipf("%s@%s is not available from the module proxy: %v %s", mod, version, err, info.Error)
	}
	dst := filepath.Join(t.TempDir(), "src")
	err = filepath.WalkDir(info.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(info.Dir, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s: %v", info.Dir, err)
	}
	return dst
}

// buildTool makes the module at src depend on this repository (and on the
// given module@version replacements) and builds its package pkg.
func buildTool(t *testing.T, src, pkg string, replaces ...string) string {
	t.Helper()
	edit := []string{"mod", "edit", "-require", "github.com/memorder/wafl@v0.0.0", "-replace", "github.com/memorder/wafl=" + repoRoot(t)}
	for _, r := range replaces {
		edit = append(edit, "-replace", r)
	}
	goCmd(t, src, edit...)
	bin := filepath.Join(t.TempDir(), "tool")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	goCmd(t, src, "build", "-o", bin, pkg)
	return bin
}

// goCmd runs the go command in dir. A failure to download a module (the
// tools' dependencies come from the module proxy) skips the test; any
// other failure fails it.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	switch {
	case err == nil:
	case downloadFailed.Match(out):
		t.Skipf("go %s in %s: a module is not available from the module proxy:\n%s", strings.Join(args, " "), dir, out)
	default:
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// downloadFailed matches the go command's messages for a module it could
// not download.
var downloadFailed = regexp.MustCompile(`(?m)(: reading https?://\S+: \d{3}|: dial tcp|GOPROXY=off|: module lookup disabled|verifying module: .*: reading https?://)`)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// repoRoot is the directory of this repository's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return dir
}
