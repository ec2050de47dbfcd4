// Dependencies instrumented on request (--instrument PATTERN): the
// packages the matched packages' test binaries link, outside the main
// module, whose import paths match one of Config.Instrument. They are
// rewritten like the main module's packages, into the work directory, and
// reach the build through the overlay: the module cache and a replaced
// module's directory are read, never written. Their site ids are the same
// hash of package, file base name and position (instrument/siteid.go), so they do not
// depend on where the module cache is.

package build

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// testDeps is what the test binaries of the matched packages link besides
// the matched packages themselves.
type testDeps struct {
	main    []string // packages of the main module
	foreign []string // packages of other modules that match Config.Instrument
}

// listTestDeps lists the packages the test binaries of patterns link and
// the patterns do not match: those of the main module (always
// instrumented) and those of other modules that match one of instr. A
// pattern of instr that matches none of them is an error.
func (b *builder) listTestDeps(ctx context.Context, patterns, flags, instr []string) (*testDeps, error) {
	skipMain := false
	for _, p := range patterns {
		if p == "./..." && b.dir == b.modRoot {
			skipMain = true // every package of the module is matched already
		}
	}
	if skipMain && len(instr) == 0 {
		return &testDeps{}, nil
	}
	for _, p := range instr {
		if p == "" || strings.HasPrefix(p, ".") || strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("--instrument %q: want an import path pattern (example.com/lib/...), not a directory; the main module's packages are instrumented already", p)
		}
	}
	// One line per dependency: import path, standard, main module.
	args := append([]string{"list", "-e", "-deps", "-test",
		"-f", "{{if .DepOnly}}{{if not .ForTest}}{{.ImportPath}} {{.Standard}} {{with .Module}}{{.Main}}{{else}}false{{end}}{{end}}{{end}}"}, flags...)
	args = append(args, "--")
	args = append(args, patterns...)
	out, err := goCmd(ctx, b.dir, b.env, args...)
	if err != nil {
		return nil, fmt.Errorf("listing the dependencies of %s: %w", strings.Join(patterns, " "), err)
	}
	deps := &testDeps{}
	matched := make([]bool, len(instr))
	var stdOnly []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || strings.HasSuffix(f[0], ".test") {
			continue
		}
		path, std, main := f[0], f[1] == "true", f[2] == "true"
		switch {
		case main:
			if !skipMain {
				deps.main = append(deps.main, path)
			}
		case std, isRuntimePackage(path), strings.HasPrefix(path, waflModulePath+"/"):
			for _, p := range instr {
				if matchPattern(p, path) {
					stdOnly = append(stdOnly, path)
					break
				}
			}
		default:
			hit := false
			for i, p := range instr {
				if matchPattern(p, path) {
					matched[i], hit = true, true
				}
			}
			if hit {
				deps.foreign = append(deps.foreign, path)
			}
		}
	}
	var errs []error
	for i, p := range instr {
		if matched[i] {
			continue
		}
		why := "no package outside the main module that the tests of " + strings.Join(patterns, " ") + " link matches it"
		if len(stdOnly) > 0 {
			why += " (the standard library and wafl's runtime are never instrumented)"
		}
		errs = append(errs, fmt.Errorf("--instrument %s: %s", p, why))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Strings(deps.main)
	sort.Strings(deps.foreign)
	return deps, nil
}

// loadForeign loads the foreign dependencies to instrument, without their
// tests (only their package code is linked into the test binaries). A
// package that does not load is an error: the user asked for it.
func (b *builder) loadForeign(ctx context.Context, paths, flags []string) ([]*unit, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	pcfg := &packages.Config{
		Context: ctx,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
			packages.NeedImports | packages.NeedTypes | packages.NeedSyntax |
			packages.NeedTypesInfo | packages.NeedModule | packages.NeedEmbedFiles,
		Dir:        b.dir,
		Env:        b.env,
		BuildFlags: flags,
	}
	pkgs, err := loadSource(ctx, pcfg, paths)
	if err != nil {
		return nil, fmt.Errorf("--instrument: loading %s: %w", strings.Join(paths, " "), err)
	}
	var units []*unit
	var errs []error
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			var pe []error
			for _, e := range p.Errors {
				pe = append(pe, e)
			}
			errs = append(errs, fmt.Errorf("--instrument: %s: %w", p.PkgPath, errors.Join(pe...)))
			continue
		}
		u := &unit{pkg: &Package{ImportPath: p.PkgPath, Dir: pkgDir(p)}, src: p, files: map[string]string{}, dep: true, foreign: true}
		if p.Module != nil {
			u.lang = p.Module.GoVersion
			if u.lang == "" {
				u.lang = "1.16"
			}
		}
		units = append(units, u)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return units, nil
}

// matchPattern reports whether the import path matches the go package
// pattern: "..." matches any string, and a pattern ending in "/..." also
// matches the path without it (as the go command's patterns do).
func matchPattern(pattern, path string) bool {
	if !strings.Contains(pattern, "...") {
		return pattern == path
	}
	re := regexp.QuoteMeta(pattern)
	re = strings.ReplaceAll(re, `\.\.\.`, `.*`)
	if strings.HasSuffix(re, `/.*`) {
		re = strings.TrimSuffix(re, `/.*`) + `(/.*)?`
	}
	ok, _ := regexp.MatchString("^"+re+"$", path)
	return ok
}
