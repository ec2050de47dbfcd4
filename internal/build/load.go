package build

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/memorder/wafl/instrument"
)

// load loads the packages matched by the patterns with their tests, the
// main module's packages their test binaries link, and the dependencies
// to instrument on request (deps.go), as units in import-path order. A
// package that cannot be built gets its Err set.
func (b *builder) load(ctx context.Context) ([]*unit, error) {
	patterns := b.cfg.Patterns
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	var flags []string
	if len(b.cfg.Tags) > 0 {
		flags = append(flags, "-tags="+strings.Join(b.cfg.Tags, ","))
	}
	pcfg := &packages.Config{
		Context: ctx,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
			packages.NeedImports | packages.NeedTypes | packages.NeedSyntax |
			packages.NeedTypesInfo | packages.NeedModule | packages.NeedForTest | packages.NeedEmbedFiles,
		Dir:        b.dir,
		Env:        b.env,
		BuildFlags: flags,
		Tests:      true,
	}
	td, err := b.listTestDeps(ctx, patterns, flags, b.cfg.Instrument)
	if err != nil {
		return nil, err
	}
	deps := td.main
	args := append(append([]string(nil), patterns...), deps...)
	pkgs, err := loadSource(ctx, pcfg, args)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", strings.Join(patterns, " "), err)
	}
	foreign, err := b.loadForeign(ctx, td.foreign, flags)
	if err != nil {
		return nil, err
	}
	isDep := map[string]bool{}
	for _, d := range deps {
		isDep[d] = true
	}
	byPath := map[string]*unit{}
	get := func(path string) *unit {
		u := byPath[path]
		if u == nil {
			u = &unit{pkg: &Package{ImportPath: path}, files: map[string]string{}, dep: isDep[path]}
			byPath[path] = u
		}
		return u
	}
	b.loaded = pkgs
	b.embedded = embeddedFiles(pkgs)
	for _, u := range foreign {
		for p, ok := range embeddedFiles([]*packages.Package{u.src}) {
			b.embedded[p] = ok
		}
	}
	for _, p := range pkgs {
		switch {
		case strings.HasSuffix(p.PkgPath, ".test") && p.Name == "main" && p.ForTest == "":
			continue // the generated test main
		case p.ForTest != "" && strings.HasSuffix(p.PkgPath, "_test"):
			get(p.ForTest).xtest = p
		case p.ForTest != "":
			get(p.ForTest).src = p
		default:
			u := get(p.PkgPath)
			if u.src == nil {
				u.src = p
			}
		}
	}
	if len(byPath) == 0 {
		return nil, fmt.Errorf("patterns %s matched no packages", strings.Join(patterns, " "))
	}
	var units []*unit
	for _, u := range byPath {
		units = append(units, u)
		if u.src == nil { // only an external test package (package dir with only x_test files)
			u.pkg.Err = errors.New("only external test files")
			continue
		}
		u.pkg.Dir = pkgDir(u.src)
		if isRuntimePackage(u.pkg.ImportPath) {
			u.pkg.Err = errors.New("part of the wafl runtime, which is never instrumented")
			continue
		}
		var errs []error
		for _, p := range []*packages.Package{u.src, u.xtest} {
			if p == nil {
				continue
			}
			for _, e := range p.Errors {
				errs = append(errs, e)
			}
		}
		if len(errs) > 0 {
			u.pkg.Err = errors.Join(errs...) // one per line
			continue
		}
		u.pkg.Tests, u.pkg.NoDelay = testNames(u.src, u.xtest)
		if !hasTestFiles(u.src) && u.xtest == nil {
			u.pkg.Err = ErrNoTestFiles
		}
	}
	units = append(units, foreign...)
	sort.Slice(units, func(i, j int) bool { return units[i].pkg.ImportPath < units[j].pkg.ImportPath })
	return units, nil
}

// embeddedFiles returns the files that the packages embed (//go:embed,
// test files' directives included: the test variants list them).
func embeddedFiles(pkgs []*packages.Package) map[string]bool {
	m := map[string]bool{}
	for _, p := range pkgs {
		if p == nil {
			continue
		}
		for _, f := range p.EmbedFiles {
			m[f] = true
		}
	}
	return m
}

func pkgDir(p *packages.Package) string {
	if p.Dir != "" {
		return p.Dir
	}
	if len(p.GoFiles) > 0 {
		return filepath.Dir(p.GoFiles[0])
	}
	return ""
}

func hasTestFiles(p *packages.Package) bool {
	for _, f := range p.GoFiles {
		if strings.HasSuffix(f, "_test.go") {
			return true
		}
	}
	return false
}

// testNames lists the Test* functions of the test files.
//
// noDelay are those whose doc comment carries the directive //wafl:nodelay
// (a test whose timing assumptions delays break: it is recorded and
// planned as every test, and detect leaves it alone).
func testNames(ps ...*packages.Package) (names, noDelay []string) {
	for _, p := range ps {
		if p == nil {
			continue
		}
		for _, f := range p.Syntax {
			if !strings.HasSuffix(p.Fset.Position(f.Pos()).Filename, "_test.go") {
				continue
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv != nil || fd.Name.Name == "TestMain" || !instrument.IsTestName(fd.Name.Name) {
					continue
				}
				if fd.Type.TypeParams != nil || len(fd.Type.Params.List) != 1 {
					continue
				}
				names = append(names, fd.Name.Name)
				if hasDirective(fd.Doc, "wafl:nodelay") {
					noDelay = append(noDelay, fd.Name.Name)
				}
			}
		}
	}
	sort.Strings(names)
	sort.Strings(noDelay)
	return names, noDelay
}

// hasDirective reports whether the comment group has the line //name (a
// directive: no space after the slashes), alone or followed by text.
func hasDirective(doc *ast.CommentGroup, name string) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if rest, ok := strings.CutPrefix(c.Text, "//"+name); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return true
		}
	}
	return false
}
