// Rewriting one package: the entry point of the package. The caller (the
// builder, internal/build) loads the packages, hands each to RewritePackage
// with the build's SiteAlloc, and puts the files it gets back into the
// build's overlay.

package instrument

import (
	"go/ast"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// MinLang is the language version rewritten and generated files need
// (generic helper calls, and the first version whose //go:build lines may
// set a file's language version). The caller compiles the files of a
// module whose go line is older at this version, with a build constraint.
const MinLang = "go1.21"

// Names of the files generated into every rewritten package, in the
// package's directory (File.Path); the caller refuses to build a package
// that has a file of one of these names.
const (
	helperFile   = "zz_wafl_helpers.go"
	xHelperFile  = "zz_wafl_helpers_x_test.go"
	testMainFile = "zz_wafl_testmain_test.go"
)

// Unit is one package to rewrite, as golang.org/x/tools/go/packages loaded
// it with its syntax and type information.
type Unit struct {
	// Path is the package's import path: it is part of every site id.
	Path string
	// Dir is the package's directory, where the generated files join it.
	Dir string
	// Pkg is the package, with its internal test files if it has any
	// ("p [p.test]"); XTest is its external test package ("p_test
	// [p.test]"), or nil.
	Pkg, XTest *packages.Package
	// NoTestMain leaves out the generated TestMain a test binary needs
	// when the package has none: for packages whose tests are never
	// built (another module's, instrumented because the tests link it).
	NoTestMain bool
	// Embedded are files that a package of the build embeds (//go:embed):
	// they are left as they are, since an instrumented copy in the build
	// would also be what the package embeds (a test that serves or
	// hashes its own source sees the copy's bytes, not the file's).
	Embedded map[string]bool
}

// File is one file of a rewritten package.
type File struct {
	// Path is where the file belongs in the build: the user's file it
	// replaces or, for a generated file, the path in the package's
	// directory at which it joins the package (no file may exist there).
	Path string
	// Rel is a path for the file's copy, relative to a directory of the
	// package's own and unique in it: a rewritten file's base name, under
	// _xtest/ for the external test package's files, and a generated
	// file under _generated/, so that no user file name can collide with
	// another.
	Rel string
	// Generated marks a file wafl adds to the package rather than a
	// rewritten file of the user's.
	Generated bool
	// Src is the file's content.
	Src []byte
}

// Rewritten is what RewritePackage makes of a Unit.
type Rewritten struct {
	// Files are the files that differ from the user's (a file without a
	// site or a test function is left out) and the generated ones.
	Files []File
	// NumFiles is the number of the user's files rewritten, NumSites the
	// number of sites in them.
	NumFiles, NumSites int
	// Skipped lists the constructs left uninstrumented on purpose, as
	// "file:line:col: why" (for example a go statement whose argument
	// type cannot be spelled, or a store in a select case).
	Skipped []string
	// Embedded are the user's files left as they are because a package
	// embeds them (Unit.Embedded).
	Embedded []string
}

// RewritePackage rewrites the files of u (with its test files and its
// external test package) so that every site calls the runtime, adds the
// generated helper files (and a TestMain when the tests have none, unless
// u.NoTestMain), and numbers the sites with alloc, which adds them to its
// site table. Cgo files, the files cgo generates and the files a package
// embeds are left as they are; files that carry //line directives of their
// own keep them instead of getting wafl's.
func RewritePackage(u Unit, alloc *SiteAlloc) (*Rewritten, error) {
	alloc.setPackage(u.Path)
	res := &Rewritten{}
	mainFound := false
	for _, p := range []*packages.Package{u.Pkg, u.XTest} {
		if p == nil {
			continue
		}
		for _, f := range p.Syntax {
			if strings.HasSuffix(p.Fset.File(f.Pos()).Name(), "_test.go") && hasTestMain(f) {
				mainFound = true
			}
		}
	}
	for i, p := range []*packages.Package{u.Pkg, u.XTest} {
		if p == nil {
			continue
		}
		goFiles := map[string]bool{}
		for _, f := range p.GoFiles {
			goFiles[f] = true
		}
		// Locals are shared per package; the files are rewritten in order.
		shared := sharedLocals(p.TypesInfo, p.Syntax)
		fl := newFlow(p.TypesInfo, p.Types, p.Syntax)
		type named struct {
			name string
			f    *ast.File
		}
		var files []named
		for _, f := range p.Syntax {
			// The unadjusted name: cgo's generated files carry //line
			// directives naming the user's cgo file.
			name := p.Fset.File(f.Pos()).Name()
			if !goFiles[name] || importsC(f) {
				continue // cgo-generated or cgo file: left as it is
			}
			if u.Embedded[name] {
				res.Embedded = append(res.Embedded, name)
				continue
			}
			files = append(files, named{name, f})
		}
		sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
		for _, nf := range files {
			// Generated code that maps itself to another source keeps its
			// mapping rather than getting ours.
			lineDirectives := !hasLineDirectives(nf.f)
			fr, err := rewriteFile(p.Fset, p.TypesInfo, shared, fl, alloc, nf.f, nf.name, strings.HasSuffix(nf.name, "_test.go"), lineDirectives)
			if err != nil {
				return nil, err
			}
			res.Skipped = append(res.Skipped, fr.notes...)
			if !fr.changed {
				continue
			}
			rel := filepath.Base(nf.name)
			if i == 1 {
				rel = filepath.Join("_xtest", rel)
			}
			res.Files = append(res.Files, File{Path: nf.name, Rel: rel, Src: fr.src})
			res.NumFiles++
			res.NumSites += fr.numSites
		}
		hname, base := helperFile, "helpers.go"
		if i == 1 {
			hname, base = xHelperFile, "xtest_helpers_test.go"
		}
		res.Files = append(res.Files, generated(u.Dir, hname, base, helperSource(p.Name)))
	}
	if !mainFound && !u.NoTestMain {
		res.Files = append(res.Files, generated(u.Dir, testMainFile, "testmain_test.go", testMainSource(u.Pkg.Name)))
	}
	return res, nil
}

// generated is the generated file name in the package directory dir,
// kept as _generated/base.
func generated(dir, name, base string, src []byte) File {
	return File{Path: filepath.Join(dir, name), Rel: filepath.Join("_generated", base), Generated: true, Src: src}
}

// IsTestName reports whether name is the name of a test function as go
// test sees it: Test, or Test followed by anything that does not start
// with a lower-case letter.
func IsTestName(name string) bool {
	if !strings.HasPrefix(name, "Test") {
		return false
	}
	if len(name) == 4 {
		return true
	}
	r := name[4]
	return !(r >= 'a' && r <= 'z')
}

func importsC(f *ast.File) bool {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == "C" {
			return true
		}
	}
	return false
}
