package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/tools/go/gcexportdata"
	"golang.org/x/tools/go/packages"
)

// Loading the packages to instrument with one compile (docs/design.md,
// "Loading"). packages.Load with NeedTypes asks `go list -export` for the
// export data of every package it lists, the packages it then
// type-checks from source included: the go command compiles the module's
// packages and their test variants once for that, uninstrumented, and
// again when wafl builds the instrumented test binaries. loadSource gets
// the package graph and the syntax without export data, asks for export
// data of the packages it does not check from source only (the
// dependencies, whose compiled form the instrumented build then finds in
// the build cache), and type-checks the others from source in import
// order, as packages.Load would.

// loadSource loads patterns as packages.Load(cfg, patterns...) with cfg's
// mode (which must include NeedTypes, NeedTypesInfo, NeedSyntax and
// NeedImports) would: the packages matched, and those packages.Load
// parses because they import one, type-checked from source; the other
// imports from export data.
func loadSource(ctx context.Context, cfg *packages.Config, patterns []string) ([]*packages.Package, error) {
	c := *cfg
	c.Mode &^= packages.NeedTypes | packages.NeedTypesInfo | packages.NeedTypesSizes
	if c.Fset == nil {
		c.Fset = token.NewFileSet()
	}
	roots, err := packages.Load(&c, patterns...)
	if err != nil {
		return nil, err
	}
	// The packages to type-check from source: the roots, and the
	// packages packages.Load parsed because they import one (a module
	// package recompiled for another's test, "b [a.test]"); the others
	// come from export data.
	isRoot := make(map[*packages.Package]bool, len(roots))
	for _, p := range roots {
		isRoot[p] = true
	}
	isSrc := map[*packages.Package]bool{}
	var srcs, deps []*packages.Package
	packages.Visit(roots, nil, func(p *packages.Package) {
		if isRoot[p] || len(p.Syntax) > 0 {
			isSrc[p] = true
			srcs = append(srcs, p)
		} else {
			deps = append(deps, p)
		}
	})
	exports, err := listExports(ctx, &c, deps)
	if err != nil {
		return nil, err
	}
	sizes := types.SizesFor("gc", goarch(c.Env))
	ld := &srcLoader{fset: c.Fset, exports: exports, imported: map[string]*types.Package{}, isRoot: isRoot, isSrc: isSrc, sizes: sizes, failed: map[string]error{}}
	// The roots' imports from export data first, one at a time: reading
	// may add objects to packages an earlier read created, which the
	// type checkers below then only read, side by side.
	var direct []string
	for _, p := range srcs {
		for _, imp := range p.Imports {
			if !isSrc[imp] && imp.PkgPath != "unsafe" && !slices.Contains(direct, imp.PkgPath) {
				direct = append(direct, imp.PkgPath)
			}
		}
	}
	slices.Sort(direct)
	for _, path := range direct {
		if _, err := ld.readExport(path); err != nil {
			ld.failed[path] = err
		}
	}
	// In import order, as many at a time as there are CPUs.
	ready := make(map[*packages.Package]chan struct{}, len(srcs))
	for _, p := range srcs {
		ready[p] = make(chan struct{})
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, p := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ready[p])
			for _, imp := range p.Imports {
				if isSrc[imp] {
					<-ready[imp]
				}
			}
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() == nil {
				ld.check(p)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The dependencies' types, for callers that walk the import graph:
	// what export data gave, else an empty package (as packages.Load
	// leaves the packages it did not need).
	for _, p := range deps {
		if tp := ld.imported[p.PkgPath]; tp != nil {
			p.Types = tp
		} else if p.Types == nil {
			p.Types = types.NewPackage(p.PkgPath, p.Name)
		}
	}
	return roots, nil
}

// srcLoader type-checks packages from source; the other imports come
// from export data, read into one map so that every package has one
// *types.Package.
type srcLoader struct {
	fset     *token.FileSet
	exports  map[string]string          // import path -> export data file
	mu       sync.Mutex                 // imported and failed, once the type checkers run
	imported map[string]*types.Package  // by import path, from export data
	failed   map[string]error           // imports whose export data could not be read
	isRoot   map[*packages.Package]bool // the packages asked for
	isSrc    map[*packages.Package]bool // the packages type-checked from source
	sizes    types.Sizes
}

// check type-checks p from source, after its imports from source.
func (ld *srcLoader) check(p *packages.Package) {
	if p.Name == "main" && strings.HasSuffix(p.PkgPath, ".test") && p.ForTest == "" {
		return // the generated test main: nobody instruments or analyzes it
	}
	p.Fset = ld.fset
	p.Types = types.NewPackage(p.PkgPath, p.Name)
	p.TypesSizes = ld.sizes
	p.TypesInfo = &types.Info{
		Types:        map[ast.Expr]types.TypeAndValue{},
		Defs:         map[*ast.Ident]types.Object{},
		Uses:         map[*ast.Ident]types.Object{},
		Implicits:    map[ast.Node]types.Object{},
		Instances:    map[*ast.Ident]types.Instance{},
		Scopes:       map[ast.Node]*types.Scope{},
		Selections:   map[*ast.SelectorExpr]*types.Selection{},
		FileVersions: map[*ast.File]string{},
	}
	errCount := len(p.Errors)
	tc := &types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) { return ld.importFor(p, path) }),
		Error: func(err error) {
			if te, ok := err.(types.Error); ok {
				p.TypeErrors = append(p.TypeErrors, te)
				p.Errors = append(p.Errors, packages.Error{Pos: te.Fset.Position(te.Pos).String(), Msg: te.Msg, Kind: packages.TypeError})
				return
			}
			p.Errors = append(p.Errors, packages.Error{Pos: "-", Msg: err.Error(), Kind: packages.UnknownError})
		},
		Sizes: ld.sizes,
		// Bodies only of the packages asked for, as packages.Load.
		IgnoreFuncBodies: !ld.isRoot[p],
	}
	if p.Module != nil && p.Module.GoVersion != "" {
		tc.GoVersion = "go" + p.Module.GoVersion
	}
	err := types.NewChecker(tc, ld.fset, p.Types, p.TypesInfo).Files(p.Syntax)
	if err != nil && len(p.Errors) == errCount {
		p.Errors = append(p.Errors, packages.Error{Pos: "-", Msg: err.Error(), Kind: packages.TypeError})
	}
	p.IllTyped = len(p.Errors) > 0
	for _, imp := range p.Imports {
		if imp.IllTyped {
			p.IllTyped = true
		}
	}
}

// importFor resolves path as imported by p: a package checked from
// source, or the export data of the package p's import graph names.
func (ld *srcLoader) importFor(p *packages.Package, path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	imp := p.Imports[path]
	if imp == nil {
		return nil, fmt.Errorf("%s: no metadata for import %q", p.ID, path)
	}
	if ld.isSrc[imp] {
		if imp.Types == nil {
			return nil, fmt.Errorf("%s: import %q not type-checked", p.ID, path)
		}
		return imp.Types, nil
	}
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if err := ld.failed[imp.PkgPath]; err != nil {
		return nil, err
	}
	if tp := ld.imported[imp.PkgPath]; tp != nil && tp.Complete() {
		return tp, nil
	}
	return nil, fmt.Errorf("%s: no export data for import %q", p.ID, path)
}

// readExport reads the export data of the package at path into the
// shared map, once.
func (ld *srcLoader) readExport(path string) (*types.Package, error) {
	if tp := ld.imported[path]; tp != nil && tp.Complete() {
		return tp, nil
	}
	file := ld.exports[path]
	if file == "" {
		return nil, fmt.Errorf("no export data for %s", path)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := gcexportdata.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("reading export data for %s: %w", path, err)
	}
	tp, err := gcexportdata.Read(r, ld.fset, ld.imported, path)
	if err != nil {
		return nil, fmt.Errorf("reading export data for %s: %w", path, err)
	}
	return tp, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// listExports runs `go list -export` on the dependencies (cfg's
// directory, environment and build flags, as packages.Load runs go list)
// and returns their export data files by import path. A package without
// one (it does not compile) is left out: importing it is then a type
// error of the importing root, reported as packages.Load would.
func listExports(ctx context.Context, cfg *packages.Config, deps []*packages.Package) (map[string]string, error) {
	out := map[string]string{}
	var paths []string
	for _, p := range deps {
		if p.PkgPath != "" && p.PkgPath != "unsafe" && p.PkgPath != "C" {
			paths = append(paths, p.PkgPath)
		}
	}
	if len(paths) == 0 {
		return out, nil
	}
	args := append([]string{"list", "-e", "-json=ImportPath,Export", "-export=true", "-buildvcs=false", "-pgo=off"}, cfg.BuildFlags...)
	args = append(append(args, "--"), paths...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = cfg.Dir
	cmd.Env = cfg.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list -export of %d dependencies: %v: %s", len(paths), err, strings.TrimSpace(stderr.String()))
	}
	dec := json.NewDecoder(&stdout)
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -export: %w", err)
		}
		if p.Export != "" {
			out[p.ImportPath] = p.Export
		}
	}
	return out, nil
}

// goarch is GOARCH of the environment env (the process's when unset).
func goarch(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "GOARCH="); ok && v != "" {
			return v
		}
	}
	if v := os.Getenv("GOARCH"); v != "" {
		return v
	}
	return runtime.GOARCH
}
