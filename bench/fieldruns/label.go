package fieldruns

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ParseLabel reads label=path[@commit] (a -bin flag of the field runs).
func ParseLabel(ctx context.Context, s string) (Label, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return Label{}, fmt.Errorf("-bin %q: want label=path[@commit]", s)
	}
	path, commit, _ := strings.Cut(rest, "@")
	return NewLabel(ctx, name, path, commit)
}

// NewLabel describes the wafl binary at path. Without a commit, a binary
// inside a git work tree gets that tree's HEAD (+dirty when tracked files
// outside docs/ and bench/ changed); its version is what `wafl version`
// prints.
func NewLabel(ctx context.Context, name, path, commit string) (Label, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Label{}, err
	}
	if _, err := os.Stat(abs); err != nil {
		return Label{}, fmt.Errorf("wafl binary %s: %v", name, err)
	}
	if commit == "" {
		commit = GitCommit(filepath.Dir(abs))
	}
	out, _ := exec.CommandContext(ctx, abs, "version").Output()
	return Label{Name: name, Binary: abs, Commit: commit, Version: strings.TrimSpace(string(out))}, nil
}

// GitCommit is the short HEAD of the work tree holding dir, +dirty when
// tracked files outside docs/ and bench/ changed; "" outside a work tree.
func GitCommit(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no", "--", ":(top)", ":(top,exclude)docs", ":(top,exclude)bench").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}
