package fieldbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// ErrNoProxy wraps a failure to download a module: no module proxy, or it
// does not serve the version. Callers (the CI test) skip on it.
var ErrNoProxy = errors.New("module download failed")

// GoEnv is the environment of every go command and test binary the bench
// runs: no workspace, the local toolchain, go.sum filled in as needed.
func GoEnv() []string {
	env := os.Environ()
	flags := os.Getenv("GOFLAGS")
	if !strings.Contains(flags, "-mod=") {
		flags = strings.TrimSpace(flags + " -mod=mod")
	}
	return append(env, "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS="+flags)
}

// Cmd is a command run with a time limit; on timeout its whole process group
// is killed (test binaries start children, go test starts the binary).
type Cmd struct {
	Dir     string
	Env     []string
	Timeout time.Duration
}

// Result of one command.
type Result struct {
	Out      []byte // stdout and stderr interleaved (or stdout only, see RunSplit)
	Err      []byte
	Code     int // exit status; -1 when killed or not started
	TimedOut bool
	Elapsed  time.Duration
}

// Run runs name args with combined output.
func (c Cmd) Run(ctx context.Context, name string, args ...string) Result {
	return c.run(ctx, true, name, args...)
}

// RunSplit runs name args keeping stdout and stderr apart.
func (c Cmd) RunSplit(ctx context.Context, name string, args ...string) Result {
	return c.run(ctx, false, name, args...)
}

func (c Cmd) run(ctx context.Context, combined bool, name string, args ...string) Result {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	if combined {
		cmd.Stderr = &out
	} else {
		cmd.Stderr = &errb
	}
	start := time.Now()
	err := cmd.Run()
	r := Result{Out: out.Bytes(), Err: errb.Bytes(), Elapsed: time.Since(start), Code: -1}
	if cmd.ProcessState != nil {
		r.Code = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		r.TimedOut = true
		r.Code = -1
	}
	if err != nil && r.Code == 0 {
		r.Code = -1
	}
	return r
}

// Download fetches MODULE@VERSION through the module proxy into the module
// cache, with a retry budget (the proxy is remote; a blip must not decide a
// result), and returns the module cache directory. It wraps ErrNoProxy.
func Download(ctx context.Context, modVersion string, tries int) (string, error) {
	tmp, err := os.MkdirTemp("", "fieldbench-dl-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	var last string
	modPath, _, _ := strings.Cut(modVersion, "@")
	noSumDB := false
	for i := 0; i < tries; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(time.Duration(i) * 3 * time.Second):
			}
		}
		env := GoEnv()
		if noSumDB {
			env = append(env, "GONOSUMDB="+modPath)
		}
		r := Cmd{Dir: tmp, Env: env, Timeout: 3 * time.Minute}.RunSplit(ctx, "go", "mod", "download", "-json", modVersion)
		var info struct{ Dir, Error string }
		if jerr := json.Unmarshal(r.Out, &info); jerr == nil && info.Dir != "" && r.Code == 0 {
			return info.Dir, nil
		}
		last = strings.TrimSpace(info.Error + " " + string(r.Err))
		// The proxy serves some versions the checksum database does not
		// know (lookup 404): the module itself is then taken from the proxy
		// unverified; its dependencies are still checked.
		if !noSumDB && strings.Contains(last, "/sumdb/") && strings.Contains(last, "404 Not Found") {
			noSumDB = true
			i--
		}
	}
	return "", fmt.Errorf("%w: %s: %s", ErrNoProxy, modVersion, last)
}

// CopyTree copies the module cache directory src to dst, writable (the module
// cache itself is read-only and is never modified).
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if info, err := d.Info(); err == nil && info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		return os.WriteFile(target, data, mode)
	})
}

var diffFile = regexp.MustCompile(`(?m)^\+\+\+ (\S+)`)

// PatchFiles lists the files a unified diff changes (paths after -p1).
func PatchFiles(patch []byte) []string {
	var files []string
	for _, m := range diffFile.FindAllSubmatch(patch, -1) {
		p := string(m[1])
		if p == "/dev/null" {
			continue
		}
		if i := strings.IndexByte(p, '/'); i >= 0 {
			p = p[i+1:]
		}
		files = append(files, p)
	}
	return files
}

// CheckTestOnly fails when the patch touches anything but test files
// (*_test.go and files under testdata/).
func CheckTestOnly(patch []byte) error {
	files := PatchFiles(patch)
	if len(files) == 0 {
		return errors.New("patch changes no file")
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "testdata/") || strings.Contains(f, "/testdata/") {
			continue
		}
		return fmt.Errorf("patch changes %s: only test files may be patched", f)
	}
	return nil
}

// ApplyPatch applies a -p1 unified diff inside dir with `git apply` (which
// works outside a repository).
func ApplyPatch(ctx context.Context, dir string, patch []byte) error {
	if err := CheckTestOnly(patch); err != nil {
		return err
	}
	pf := filepath.Join(dir, ".fieldbench.patch")
	if err := os.WriteFile(pf, patch, 0o644); err != nil {
		return err
	}
	defer os.Remove(pf)
	r := Cmd{Dir: dir, Timeout: time.Minute}.Run(ctx, "git", "apply", "-p1", "--whitespace=nowarn", pf)
	if r.Code != 0 {
		return fmt.Errorf("git apply: %s", bytes.TrimSpace(r.Out))
	}
	return nil
}

// Source is a prepared copy of a bug's module.
type Source struct {
	Root    string // module root (writable copy)
	PkgDir  string // directory of the package under test
	Patched bool
}

// PrepareSource downloads the manifest's module version, copies it to
// work/src, makes it writable and applies the patch.
func PrepareSource(ctx context.Context, m *Manifest, work string) (*Source, error) {
	cache, err := Download(ctx, m.ModVersion(), 3)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(work, "src")
	if err := os.RemoveAll(root); err != nil {
		return nil, err
	}
	if err := CopyTree(cache, root); err != nil {
		return nil, fmt.Errorf("copying %s: %v", cache, err)
	}
	s := &Source{Root: root, PkgDir: filepath.Join(root, filepath.FromSlash(m.Package))}
	if m.Patch != "" {
		patch, err := os.ReadFile(filepath.Join(m.Dir, m.Patch))
		if err != nil {
			return nil, err
		}
		if err := ApplyPatch(ctx, root, patch); err != nil {
			return nil, fmt.Errorf("%s: %v", m.Patch, err)
		}
		s.Patched = true
	}
	if _, err := os.Stat(s.PkgDir); err != nil {
		return nil, fmt.Errorf("package %s: %v", m.Package, err)
	}
	return s, nil
}

// BuildTest builds the package's plain (race: -race) test binary to out.
// The first build also completes go.sum (GOFLAGS=-mod=mod).
func BuildTest(ctx context.Context, s *Source, m *Manifest, race bool, out string) Result {
	args := []string{"test", "-c", "-vet=off", "-o", out} // as wafl builds: vet findings in the module are not the bench's business
	if race {
		args = append(args, "-race")
	}
	args = append(args, m.Package)
	r := Cmd{Dir: s.Root, Env: GoEnv(), Timeout: 15 * time.Minute}.Run(ctx, "go", args...)
	return r
}
