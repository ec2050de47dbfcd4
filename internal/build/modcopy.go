package build

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// Dependencies in the module cache. The go command refuses an overlay
// that replaces a file beneath GOMODCACHE, so a module that --instrument
// reaches there is built from a copy in the work directory instead: its
// files are hard-linked (or copied) into build/mod/<module>@<version>, the
// alternate go.mod replaces the module with that directory, and the
// overlay names the copy's files. The module cache itself is only read.

// modCopy is one module built from a copy.
type modCopy struct {
	path, version string
	src, dst      string // the module's directory in the cache, and its copy
}

// relocate returns the name under which the overlay must replace the
// file name: in the copy of its module when the module is built from one.
func (b *builder) relocate(name string) string {
	for _, c := range b.copies {
		if rel, ok := strings.CutPrefix(name, c.src+string(filepath.Separator)); ok {
			return filepath.Join(c.dst, rel)
		}
	}
	return name
}

// copyForeignModules makes a copy of each module in the module cache that
// holds a foreign unit, and records it in b.copies.
func (b *builder) copyForeignModules(ctx context.Context, units []*unit) error {
	var cache string
	seen := map[string]bool{}
	for _, u := range units {
		if !u.foreign || u.src == nil || u.src.Module == nil {
			continue
		}
		m := u.src.Module
		if m.Replace != nil {
			m = m.Replace
		}
		if m.Dir == "" || m.Version == "" || seen[m.Path] {
			continue
		}
		if cache == "" {
			out, err := goCmd(ctx, b.dir, b.env, "env", "GOMODCACHE")
			if err != nil {
				return fmt.Errorf("--instrument: finding the module cache: %w", err)
			}
			if cache = strings.TrimSpace(out); cache == "" {
				return nil
			}
		}
		if !strings.HasPrefix(m.Dir, cache+string(filepath.Separator)) {
			continue // a replacement directory: the overlay may name its files
		}
		seen[m.Path] = true
		esc, err := module.EscapePath(u.src.Module.Path)
		if err != nil {
			return fmt.Errorf("--instrument: %s: %w", u.src.Module.Path, err)
		}
		dst := filepath.Join(b.work, "build", "mod", filepath.FromSlash(esc)+"@"+m.Version)
		if err := copyModule(m.Dir, dst, u.src.Module.Path); err != nil {
			return fmt.Errorf("--instrument: copying %s@%s out of the module cache: %w", m.Path, m.Version, err)
		}
		b.copies = append(b.copies, modCopy{path: u.src.Module.Path, version: m.Version, src: m.Dir, dst: dst})
	}
	sort.Slice(b.copies, func(i, j int) bool { return b.copies[i].path < b.copies[j].path })
	return nil
}

// copyModule makes dst a copy of the module directory src (files
// hard-linked where the file system allows it), once: a module version in
// the cache never changes, so a complete copy (marked by a file written
// last) is reused. A module without a go.mod gets a minimal one, which a
// directory replacement needs.
func copyModule(src, dst, path string) error {
	done := filepath.Join(dst, ".wafl-copied")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			if os.Link(p, to) == nil {
				return nil
			}
			return copyFile(p, to)
		}
		return nil // symlinks and the like are not in module zips
	})
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dst, "go.mod")); os.IsNotExist(err) {
		if err := os.WriteFile(filepath.Join(dst, "go.mod"), []byte("module "+modfile.AutoQuote(path)+"\n"), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(done, nil, 0o644)
}

// lineDirective makes the rewritten Go file at path, which the build
// compiles under the name of its module's copy, name its positions after
// the original file name in the module cache (a //line directive before its
// first line): panics, stack traces and reports then show the file the
// site table names. The rewriting keeps line numbers, so the directive
// only renames.
func lineDirective(path, name string) error {
	if !strings.HasSuffix(path, ".go") {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dir := "//line " + name + ":1\n"
	if strings.HasPrefix(string(data), dir) {
		return nil
	}
	return os.WriteFile(path, append([]byte(dir), data...), 0o644)
}

// replaceCopies returns the go.mod text mod with every copied module
// replaced by its copy (an earlier replacement of that module dropped).
func replaceCopies(mod []byte, copies []modCopy) ([]byte, error) {
	if len(copies) == 0 {
		return mod, nil
	}
	f, err := modfile.Parse("go.mod", mod, nil)
	if err != nil {
		return nil, err
	}
	for _, c := range copies {
		for _, r := range f.Replace {
			if r.Old.Path == c.path {
				if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
					return nil, err
				}
			}
		}
		if err := f.AddReplace(c.path, "", c.dst, ""); err != nil {
			return nil, err
		}
	}
	f.Cleanup()
	return f.Format()
}
