package vet

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/buildssa"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
)

// Options configure Run, the in-process driver behind `wafl vet`.
type Options struct {
	Dir      string   // directory to load packages from (default: current)
	Patterns []string // package patterns (default ./...)
	Tags     []string // build tags
	JSON     bool     // print the hints as JSON instead of text
	SARIF    string   // also write a SARIF 2.1.0 log to this file
	Version  string   // the tool's version, for SARIF
	// Mark, if set, marks the hints (confirmed, exercised, untested)
	// before they are printed.
	Mark   func([]Found)
	Stdout io.Writer
	Stderr io.Writer
}

// Found is one hint as the driver prints it.
type Found struct {
	Kind    string    `json:"kind"`
	Pos     string    `json:"pos"` // file:line:col
	Abs     string    `json:"-"`   // absolute file name
	File    string    `json:"file"`
	Line    int       `json:"line"`
	Col     int       `json:"col"`
	Message string    `json:"message"`
	Related []Related `json:"related,omitempty"`
	Pair    []Related `json:"pair"`           // the two accesses (see Hint.Pair)
	Mark    string    `json:"mark,omitempty"` // confirmed, exercised, untested
	Report  string    `json:"report,omitempty"`
	Fix     string    `json:"fix,omitempty"`
}

// Related is a position a hint refers to.
type Related struct {
	Abs     string `json:"-"` // absolute file name
	Pos     string `json:"pos"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

// Result is what Run found.
type Result struct {
	Hints    []Found
	Packages int
	Errors   []string // why packages did not load, type-check or analyze
	Failed   []string // the packages that did not
}

// Analyze loads the packages and runs the analyzer over them.
func Analyze(opts Options) (*Result, error) {
	patterns := opts.Patterns
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	cfg := &packages.Config{
		// Dependencies come from export data: the analyzer needs no facts,
		// so only the packages analyzed are parsed and type-checked.
		Mode: packages.LoadSyntax | packages.NeedModule,
		Dir:  opts.Dir,
	}
	if len(opts.Tags) > 0 {
		cfg.BuildFlags = []string{"-tags=" + strings.Join(opts.Tags, ",")}
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var ok []*packages.Package
	for _, p := range pkgs {
		if len(p.Errors) > 0 || len(p.TypeErrors) > 0 {
			res.Failed = append(res.Failed, p.PkgPath)
			seen := map[string]bool{}
			for _, e := range p.Errors {
				// go list and the type checker may report one error twice.
				if msg := e.Msg; !seen[msg] {
					seen[msg] = true
					res.Errors = append(res.Errors, e.Error())
				}
			}
			continue
		}
		ok = append(ok, p)
	}
	res.Packages = len(ok)
	cwd, _ := os.Getwd()
	if opts.Dir != "" {
		if abs, err := filepath.Abs(opts.Dir); err == nil {
			cwd = abs
		}
	}
	// Two packages at a time: SSA of a large package is the memory peak.
	results := make([][]Hint, len(ok))
	errs := make([]error, len(ok))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, p := range ok {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = analyzePackage(p)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, p := range ok {
		if errs[i] != nil {
			res.Failed = append(res.Failed, p.PkgPath)
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", p.PkgPath, errs[i]))
			continue
		}
		for _, h := range results[i] {
			f := found(p.Fset, cwd, h)
			id := f.Pos + "\x00" + f.Message
			if seen[id] {
				continue
			}
			seen[id] = true
			res.Hints = append(res.Hints, f)
		}
	}
	sort.Slice(res.Hints, func(i, j int) bool {
		a, b := res.Hints[i], res.Hints[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return res, nil
}

func found(fset *token.FileSet, cwd string, h Hint) Found {
	p := fset.Position(h.Diagnostic.Pos)
	f := Found{Kind: h.Kind, Abs: p.Filename, File: rel(cwd, p.Filename), Line: p.Line, Col: p.Column, Message: h.Diagnostic.Message}
	f.Pos = fmt.Sprintf("%s:%d:%d", f.File, f.Line, f.Col)
	related := func(pos token.Pos, msg string) Related {
		rp := fset.Position(pos)
		rr := Related{Abs: rp.Filename, File: rel(cwd, rp.Filename), Line: rp.Line, Col: rp.Column, Message: msg}
		rr.Pos = fmt.Sprintf("%s:%d:%d", rr.File, rr.Line, rr.Col)
		return rr
	}
	for _, r := range h.Diagnostic.Related {
		f.Related = append(f.Related, related(r.Pos, r.Message))
	}
	for i, pos := range h.Pair {
		f.Pair = append(f.Pair, related(pos, pairRoles[h.Kind][i]))
	}
	if len(h.Diagnostic.SuggestedFixes) > 0 {
		f.Fix = h.Diagnostic.SuggestedFixes[0].Message
	}
	return f
}

func rel(cwd, path string) string {
	if cwd == "" {
		return path
	}
	if r, err := filepath.Rel(cwd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// Run analyzes, marks, prints, and writes SARIF: what `wafl vet` does.
func Run(opts Options) (*Result, error) {
	res, err := Analyze(opts)
	if err != nil {
		return nil, err
	}
	if opts.Mark != nil {
		opts.Mark(res.Hints)
	}
	out := opts.Stdout
	if out == nil {
		out = io.Discard
	}
	if opts.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		hints := res.Hints
		if hints == nil {
			hints = []Found{}
		}
		if err := enc.Encode(hints); err != nil {
			return nil, err
		}
	} else {
		for _, h := range res.Hints {
			msg := h.Message
			switch {
			case h.Report != "":
				msg += " [" + h.Mark + ": " + h.Report + "]"
			case h.Mark != "":
				msg += " [" + h.Mark + "]"
			}
			fmt.Fprintf(out, "%s: %s\n", h.Pos, msg)
			for _, r := range h.Related {
				fmt.Fprintf(out, "\t%s: %s\n", r.Pos, r.Message)
			}
		}
	}
	if opts.SARIF != "" {
		root := opts.Dir
		if root == "" {
			root, _ = os.Getwd()
		}
		if abs, err := filepath.Abs(root); err == nil {
			root = abs
		}
		if err := writeSARIF(opts.SARIF, opts.Version, root, res.Hints); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// analyzePackage runs the analyzer on one package the way a go/analysis
// driver would, with the SSA buildssa would give it (without the no-return
// facts of dependencies, which only refine the control flow graph).
func analyzePackage(p *packages.Package) (hints []Hint, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("analyzer panic: %v", r)
		}
	}()
	prog := ssa.NewProgram(p.Fset, 0)
	for _, imp := range p.Types.Imports() {
		prog.CreatePackage(imp, nil, nil, true)
	}
	spkg := prog.CreatePackage(p.Types, p.Syntax, p.TypesInfo, false)
	spkg.Build()
	var funcs []*ssa.Function
	for _, f := range p.Syntax {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			obj, ok := p.TypesInfo.Defs[fd.Name].(*types.Func)
			if !ok {
				continue
			}
			if fn := prog.FuncValue(obj); fn != nil {
				funcs = append(funcs, fn)
			}
		}
	}
	for _, m := range spkg.Members {
		if fn, ok := m.(*ssa.Function); ok && strings.HasPrefix(fn.Name(), "init") {
			funcs = append(funcs, fn)
		}
	}
	pass := &analysis.Pass{
		Analyzer:   Analyzer,
		Fset:       p.Fset,
		Files:      p.Syntax,
		Pkg:        p.Types,
		TypesInfo:  p.TypesInfo,
		TypesSizes: p.TypesSizes,
		ResultOf:   map[*analysis.Analyzer]any{buildssa.Analyzer: &buildssa.SSA{Pkg: spkg, SrcFuncs: funcs}},
		Report:     func(analysis.Diagnostic) {},
		ReadFile:   os.ReadFile,
	}
	out, err := Analyzer.Run(pass)
	if err != nil {
		return nil, err
	}
	return out.([]Hint), nil
}

// pairRoles name the two accesses of each kind's pair.
var pairRoles = map[string][2]string{
	KindUseBeforeInit:   {"init", "use"},
	KindUseAfterDispose: {"dispose", "use"},
	KindCheckThenAct:    {"check", "act"},
	KindWaitGroup:       {"add", "done"},
}
