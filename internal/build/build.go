package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/tools/go/packages"

	wafl "github.com/memorder/wafl"
	"github.com/memorder/wafl/instrument"
	"github.com/memorder/wafl/instrument/sites"
)

// Config says what to instrument and where to put the results.
type Config struct {
	// Dir is where to run: a directory inside the user's module. Empty
	// means the current directory.
	Dir string
	// WorkDir is wafl's work directory; empty means .wafl at the root of
	// the module containing Dir.
	WorkDir string
	// Patterns are go package patterns (./..., import paths), resolved in
	// Dir. Empty means ".".
	Patterns []string
	// Tags are extra build tags, for both loading and building.
	Tags []string
	// Instrument are import path patterns (example.com/lib/...) of packages
	// outside the main module to instrument too, when the test binaries
	// link them (deps.go). Each must match at least one such package.
	Instrument []string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Result is the outcome of Build: one entry per package matched by the
// patterns, in import-path order.
type Result struct {
	Packages []*Package
	// WorkDir is the work directory actually used.
	WorkDir string
	// Sites is the total number of sites in the build's site table.
	Sites int
	// LoadTime, RewriteTime and BuildTime split the wall time of Build.
	LoadTime, RewriteTime, BuildTime time.Duration
	// From says where the binaries came from: FromBuild (this build),
	// FromWorkDir (the work directory's last build) or FromStore (the
	// build store).
	From string
	// ReachTime is the time the reach files took (SSA, call graph),
	// mostly while the go command built; ReachWait the part of it after
	// the build, which adds to the wall time.
	ReachTime, ReachWait time.Duration
}

// Package is one package under test.
type Package struct {
	ImportPath string
	Dir        string
	// Binary is the instrumented test binary; Sites is its site table
	// (sites.Table JSON) beside it. Both are empty when Err is not nil.
	Binary, Sites string
	// Files is the number of the package's Go files (with its test files)
	// that were rewritten; NumSites the number of sites in them.
	Files, NumSites int
	// Tests are the package's Test* functions, from the source, sorted.
	Tests []string
	// NoDelay are the tests whose doc comment has the directive
	// //wafl:nodelay: they are recorded and planned, never delayed.
	NoDelay []string
	// Skipped lists the constructs left uninstrumented on purpose, as
	// "file:line:col: why" (for example a go statement whose argument type
	// cannot be spelled, or a store in a select case).
	Skipped []string
	// Err is nil if the binary was built. ErrNoTestFiles marks a package
	// with nothing to test; otherwise it says why, without the import path
	// (often the loader's or the compiler's messages, naming file and line).
	Err error
}

// Result.From values.
const (
	FromBuild   = ""
	FromWorkDir = "the work directory's last build"
	FromStore   = "the build store"
)

// ErrNoTestFiles is the Err of a package that has no test files.
var ErrNoTestFiles = errors.New("no test files")

// The runtime module as the alternate go.mod requires it.
const (
	waflModulePath = "github.com/memorder/wafl"
	waflPseudoVers = "v0.0.0-00010101000000-000000000000"
	runtimeGoLine  = "1.17"
)

// Build instruments the packages matched by cfg.Patterns and builds one
// test binary per package under cfg.WorkDir. A package that fails to load,
// instrument or build gets its Err set and the others go on; the returned
// error is for problems that stop everything (no module, unwritable work
// directory, patterns that match nothing).
func Build(ctx context.Context, cfg Config) (*Result, error) {
	b, err := newBuilder(cfg)
	if err != nil {
		return nil, err
	}
	return b.run(ctx)
}

type builder struct {
	cfg     Config
	dir     string // absolute cfg.Dir
	gomod   string // the main module's go.mod
	modRoot string
	work    string
	log     io.Writer
	env     []string
	oldLang bool   // the module's go line is older than instrument.MinLang
	rt      string // the runtime module's directory (writeRuntime)
	// loaded are the packages go/packages loaded with syntax (test
	// variants included), for the reach files (reach.go)
	loaded []*packages.Package
	// embedded are the files a loaded package embeds (//go:embed): they
	// are compiled as they are (instrument.Unit.Embedded).
	embedded map[string]bool
	// copies are the modules in the module cache that foreign units are
	// built from copies of (modcopy.go).
	copies []modCopy
}

func newBuilder(cfg Config) (*builder, error) {
	dir := cfg.Dir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "GOWORK=off")
	out, err := goCmd(context.Background(), dir, env, "env", "GOMOD")
	if err != nil {
		return nil, fmt.Errorf("%s: finding the module: %w", dir, err)
	}
	gomod := strings.TrimSpace(out)
	if gomod == "" || gomod == os.DevNull {
		return nil, fmt.Errorf("%s: not inside a Go module (no go.mod found)", dir)
	}
	b := &builder{cfg: cfg, dir: dir, gomod: gomod, modRoot: filepath.Dir(gomod), env: env, log: cfg.Log}
	if b.log == nil {
		b.log = io.Discard
	}
	b.log = &lockedWriter{w: b.log}
	gm, err := os.ReadFile(gomod)
	if err != nil {
		return nil, err
	}
	b.oldLang = langLess(goLine(gm), instrument.MinLang)
	b.work = cfg.WorkDir
	if b.work == "" {
		b.work = filepath.Join(b.modRoot, ".wafl")
	}
	if b.work, err = filepath.Abs(b.work); err != nil {
		return nil, err
	}
	return b, nil
}

// unit is one package under test: its package (with internal test files)
// and its external test package.
type unit struct {
	pkg   *Package
	src   *packages.Package // "p [p.test]", or "p" without test files
	xtest *packages.Package // "p_test [p.test]", may be nil
	files map[string]string // original path -> rewritten path (this unit's)
	// dep marks a package of the main module that the patterns did not
	// match but a matched package's test binary links: it is instrumented
	// as it would be if matched, so that a package's binary does not depend
	// on the pattern, and neither built nor tested.
	dep bool
	// foreign marks a dependency outside the main module instrumented on
	// request (Config.Instrument, deps.go); lang is its module's go line.
	foreign bool
	lang    string
}

// unitOldLang reports whether the unit's module's go line is older than
// instrument.MinLang.
func (b *builder) unitOldLang(u *unit) bool {
	if u.foreign {
		return langLess(u.lang, instrument.MinLang)
	}
	return b.oldLang
}

func (b *builder) run(ctx context.Context) (*Result, error) {
	res := &Result{WorkDir: b.work}
	t0 := time.Now()
	units, err := b.load(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.copyForeignModules(ctx, units); err != nil {
		return nil, err
	}
	res.LoadTime = time.Since(t0)

	t1 := time.Now()
	alloc := &instrument.SiteAlloc{Log: func(format string, args ...any) { fmt.Fprintf(b.log, format, args...) }}
	overlay := map[string]string{}
	for _, u := range units {
		if !u.dep {
			res.Packages = append(res.Packages, u.pkg)
		}
		if u.pkg.Err != nil {
			continue
		}
		if err := b.rewriteUnit(u, alloc); err != nil {
			if u.foreign {
				return nil, fmt.Errorf("--instrument: %s: %w", u.pkg.ImportPath, err)
			}
			u.pkg.Err = err
			continue
		}
		for k, v := range u.files {
			to := b.relocate(k)
			if to != k {
				if err := lineDirective(v, k); err != nil {
					return nil, err
				}
			}
			overlay[to] = v
		}
	}
	res.RewriteTime = time.Since(t1)
	res.Sites = len(alloc.Sites())
	// The static reach of the tests and go statements is computed while
	// the go command builds (reach.go).
	rc := b.startReach(ctx, units, alloc.Sites())

	t2 := time.Now()
	if err := b.writeRuntime(); err != nil {
		return nil, err
	}
	modfile, err := b.writeModfile()
	if err != nil {
		return nil, err
	}
	ovPath := filepath.Join(b.work, "build", "overlay.json")
	if err := writeJSON(ovPath, struct{ Replace map[string]string }{overlay}); err != nil {
		return nil, err
	}
	var todo []*unit
	for _, u := range units {
		if u.dep {
			continue
		}
		if u.pkg.Err != nil {
			if !errors.Is(u.pkg.Err, ErrNoTestFiles) {
				fmt.Fprintf(b.log, "wafl: %s: %v\n", u.pkg.ImportPath, u.pkg.Err)
			}
			continue
		}
		todo = append(todo, u)
	}
	b.buildAll(ctx, todo, modfile, func(*unit) string { return ovPath }, alloc)
	// A package can fail because an instrumented package it imports does
	// not compile: retry the failed ones with only their own files
	// rewritten.
	var failed []*unit
	for _, u := range todo {
		if u.pkg.Err != nil && len(todo) > 1 {
			failed = append(failed, u)
		}
	}
	if len(failed) > 0 {
		firstErr := map[*unit]error{}
		own := map[*unit]string{}
		for _, u := range failed {
			firstErr[u] = u.pkg.Err
			path := filepath.Join(b.work, "build", filepath.FromSlash(u.pkg.ImportPath), "overlay-own.json")
			if err := writeJSON(path, struct{ Replace map[string]string }{u.files}); err != nil {
				return nil, err
			}
			own[u] = path
			u.pkg.Err = nil
		}
		b.buildAll(ctx, failed, modfile, func(u *unit) string { return own[u] }, alloc)
		for _, u := range failed {
			if u.pkg.Err != nil {
				u.pkg.Err = firstErr[u]
			} else {
				fmt.Fprintf(b.log, "wafl: %s: built with only its own files instrumented (an imported instrumented package failed)\n", u.pkg.ImportPath)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.BuildTime = time.Since(t2)
	res.ReachTime, res.ReachWait = b.writeReach(rc, units)
	fmt.Fprintf(b.log, "wafl: load %v, rewrite %v, build %v, reach %v (%v after the build) (%d packages)\n",
		res.LoadTime.Round(time.Millisecond), res.RewriteTime.Round(time.Millisecond), res.BuildTime.Round(time.Millisecond),
		res.ReachTime.Round(time.Millisecond), res.ReachWait.Round(time.Millisecond), len(todo))
	return res, nil
}

// buildAll builds the units' test binaries: first all of them in one go
// command (buildBatch), so that the packages they share — the standard
// library, the runtime, the module's instrumented packages — are compiled
// once and the go command schedules the work over all CPUs; then each unit
// that has no binary after that (a failed build, a name clash) alone, a
// few at a time, for its own error.
func (b *builder) buildAll(ctx context.Context, units []*unit, modfile string, overlay func(*unit) string, alloc *instrument.SiteAlloc) {
	rest := units
	if len(units) > 1 {
		rest = b.buildBatch(ctx, units, modfile, overlay, alloc)
	}
	workers := runtime.GOMAXPROCS(0)
	if workers > 4 {
		workers = 4
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for _, u := range rest {
		wg.Add(1)
		go func(u *unit) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := ctx.Err(); err != nil {
				u.pkg.Err = err
				return
			}
			b.buildUnit(ctx, u, modfile, overlay(u), alloc)
		}(u)
	}
	wg.Wait()
}

func (b *builder) buildUnit(ctx context.Context, u *unit, modfile, overlay string, alloc *instrument.SiteAlloc) {
	bin := filepath.Join(b.work, "bin", filepath.FromSlash(u.pkg.ImportPath)+".test")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		u.pkg.Err = err
		return
	}
	// Each build gets its own copy of the alternate go.mod and go.sum: with
	// -mod=mod the go command may update them, and parallel builds must not
	// write one file.
	modfile, err := copyModfile(modfile, filepath.Join(b.work, "build", filepath.FromSlash(u.pkg.ImportPath)))
	if err != nil {
		u.pkg.Err = err
		return
	}
	// -vet=off: vet findings in the user's code are not wafl's business,
	// and vet would see the rewritten code.
	args := []string{"test", "-c", "-vet=off", "-o", bin, "-overlay", overlay, "-modfile", modfile, "-mod=mod"}
	args = append(args, b.buildFlags()...)
	args = append(args, u.pkg.ImportPath)
	removeIfNotObject(bin)
	start := time.Now()
	if _, err := goCmd(ctx, b.modRoot, b.env, args...); err != nil {
		u.pkg.Err = fmt.Errorf("building instrumented test binary: %w", err)
		fmt.Fprintf(b.log, "wafl: %s: %v\n", u.pkg.ImportPath, u.pkg.Err)
		return
	}
	b.built(u, bin, alloc, time.Since(start))
}

// buildFlags are the go test -c flags of every build besides the
// outputs, overlay and module files: the tags, and -ldflags=-w, which
// leaves out the DWARF debug information — nothing reads it from a test
// binary wafl runs (tracebacks and the site attribution come from the
// binary's pc-line table, which stays), and writing it is a large part of
// a link. A GOFLAGS that sets -ldflags keeps its own.
func (b *builder) buildFlags() []string {
	var flags []string
	if len(b.cfg.Tags) > 0 {
		flags = append(flags, "-tags="+strings.Join(b.cfg.Tags, ","))
	}
	if !strings.Contains(goflags(b.env), "-ldflags") {
		flags = append(flags, "-ldflags=-w")
	}
	return flags
}

// goflags returns the GOFLAGS of env (the last one counts).
func goflags(env []string) string {
	v := ""
	for _, e := range env {
		if rest, ok := strings.CutPrefix(e, "GOFLAGS="); ok {
			v = rest
		}
	}
	return v
}

// built records the freshly built binary bin of u and writes its site
// table.
func (b *builder) built(u *unit, bin string, alloc *instrument.SiteAlloc, took time.Duration) {
	table := &sites.Table{Package: u.pkg.ImportPath, Sites: alloc.Sites()}
	sitesPath := sitesPathFor(bin)
	if err := table.Save(sitesPath); err != nil {
		u.pkg.Err = err
		return
	}
	u.pkg.Binary, u.pkg.Sites = bin, sitesPath
	fmt.Fprintf(b.log, "wafl: built %s (%v)\n", bin, took.Round(time.Millisecond))
}

// goCmd runs the go command and returns its stdout. The error carries the
// command's stderr (the compiler's messages), or wraps the failure to run
// it when there is none.
// sitesPathFor is the path of the site table beside test binary bin.
func sitesPathFor(bin string) string { return strings.TrimSuffix(bin, ".test") + ".sites.json" }

func goCmd(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return stdout.String(), fmt.Errorf("go %s: %s", args[0], msg)
		}
		return stdout.String(), fmt.Errorf("go %s: %w", args[0], err)
	}
	return stdout.String(), nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeIfChanged(path, append(data, '\n'))
}

// writeIfChanged writes data to path unless the file already holds it,
// so that repeated builds keep the go build cache warm.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// lockedWriter serializes the log lines of parallel builds.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// isRuntimePackage reports whether path is one of the runtime packages the
// instrumented code calls (relevant when wafl instruments itself).
func isRuntimePackage(path string) bool {
	for _, dir := range wafl.RuntimePackages {
		if path == waflModulePath+"/"+dir {
			return true
		}
	}
	return false
}

// copyModfile copies the alternate go.mod and its go.sum into dir.
func copyModfile(modfile, dir string) (string, error) {
	out := filepath.Join(dir, "go.mod")
	for _, pair := range [][2]string{{modfile, out}, {strings.TrimSuffix(modfile, ".mod") + ".sum", strings.TrimSuffix(out, ".mod") + ".sum"}} {
		data, err := os.ReadFile(pair[0])
		if err != nil {
			return "", err
		}
		if err := writeIfChanged(pair[1], data); err != nil {
			return "", err
		}
	}
	return out, nil
}
