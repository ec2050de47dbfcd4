// Package workdir is wafl's work directory (.wafl at the module root by
// default): where each kind of file of a workflow lives, the lock that
// keeps two wafl processes out of one work directory, and the records of
// tests that failed without delays. docs/design.md shows the layout.
package workdir

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Dir is the resolved layout of one invocation.
type Dir struct {
	Run  string // where wafl runs (package patterns are relative to it)
	Root string // the main module's root
	Work string // the work directory
}

// Open resolves the module root of dir (the current directory when empty)
// and the work directory (work, or <module root>/.wafl when empty), and
// creates the work directory with a .gitignore that keeps it out of
// version control.
func Open(dir, work string) (*Dir, error) {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := ModuleRoot(dir)
	if err != nil {
		return nil, err
	}
	if work == "" {
		work = filepath.Join(root, ".wafl")
	}
	if work, err = filepath.Abs(work); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	gi := filepath.Join(work, ".gitignore")
	if _, err := os.Stat(gi); os.IsNotExist(err) {
		_ = os.WriteFile(gi, []byte("# wafl's work directory\n*\n"), 0o644)
	}
	return &Dir{Run: dir, Root: root, Work: work}, nil
}

// ModuleRoot returns the root of the main module containing dir.
func ModuleRoot(dir string) (string, error) {
	cmd := exec.Command("go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("%s: go env GOMOD: %s", dir, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("%s: go env GOMOD: %w", dir, err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("%s is not inside a Go module (no go.mod found); wafl runs a module's tests", dir)
	}
	return filepath.Dir(gomod), nil
}

// Rel returns path relative to the directory wafl runs in, when it is
// under it, and path itself otherwise.
func (w *Dir) Rel(path string) string {
	if r, err := filepath.Rel(w.Run, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// Path joins elem below the work directory.
func (w *Dir) Path(elem ...string) string {
	return filepath.Join(append([]string{w.Work}, elem...)...)
}

// TracePath is the Arrow trace of one test's preparation run.
func (w *Dir) TracePath(pkg, test string) string {
	return w.Path("traces", filepath.FromSlash(pkg), test+".arrows")
}

// RawTracePath is the spill file of one test's preparation run.
func (w *Dir) RawTracePath(pkg, test string) string {
	return w.Path("traces", filepath.FromSlash(pkg), test+".raw")
}

// PlanPath is one test's plan.
func (w *Dir) PlanPath(pkg, test string) string {
	return w.Path("plans", filepath.FromSlash(pkg), test+".json")
}

// LogPath is one of a test's run outputs or run logs.
func (w *Dir) LogPath(pkg, test, suffix string) string {
	return w.Path("logs", filepath.FromSlash(pkg), test+"."+suffix)
}

// ReportDir holds the bug reports.
func (w *Dir) ReportDir() string { return w.Path("reports") }

// BuildStatePath is the record of the last instrumented build.
func (w *Dir) BuildStatePath() string { return w.Path("build", "state.json") }

// Lock takes the work directory's lock file (<work>/lock) for the whole
// invocation, so that two wafl processes never write one work directory
// at once. It does not wait: a held lock is an error that says which
// process holds it. The lock is an advisory file lock, released by the
// kernel when the process ends, so a killed wafl leaves no stale lock.
func (w *Dir) Lock() (unlock func(), err error) {
	path := w.Path("lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("work directory lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		}
		return nil, fmt.Errorf("the work directory %s is in use by another wafl (%s); wait for it to finish, or give this one its own work directory with --dir",
			w.Work, who)
	}
	_ = f.Truncate(0)
	fmt.Fprintf(f, "pid %d, started %s: %s\n", os.Getpid(), time.Now().Format(time.RFC3339),
		strings.Join(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...), " "))
	return func() {
		_ = f.Truncate(0)
		unlockFile(f)
		f.Close()
	}, nil
}
