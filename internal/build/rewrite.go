package build

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/memorder/wafl/instrument"
)

// rewriteUnit has instrument rewrite the unit's package (with its test
// files) and its external test package, and writes the files into the
// work directory, under build/<import path>, recording them in u.files for
// the overlay. Files of a module whose go line is older than
// instrument.MinLang get a build constraint that compiles them at that
// version.
func (b *builder) rewriteUnit(u *unit, alloc *instrument.SiteAlloc) error {
	outDir := filepath.Join(b.work, "build", filepath.FromSlash(u.pkg.ImportPath))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	rw, err := instrument.RewritePackage(instrument.Unit{
		Path:       u.pkg.ImportPath,
		Dir:        u.pkg.Dir,
		Pkg:        u.src,
		XTest:      u.xtest,
		NoTestMain: u.foreign, // another module's tests are neither built nor run
		Embedded:   b.embedded,
	}, alloc)
	if err != nil {
		return err
	}
	u.pkg.Skipped = append(u.pkg.Skipped, rw.Skipped...)
	for _, f := range rw.Embedded {
		fmt.Fprintf(b.log, "wafl: %s: %s is compiled uninstrumented: a package embeds it (//go:embed), and an instrumented copy would change what it embeds\n", u.pkg.ImportPath, f)
	}
	oldLang := b.unitOldLang(u)
	for _, f := range rw.Files {
		if f.Generated {
			if _, err := os.Stat(f.Path); err == nil {
				return fmt.Errorf("%s: exists; wafl needs this name for a generated file", f.Path)
			}
		}
		src := f.Src
		if oldLang {
			src = withLang(src, instrument.MinLang, f.Path)
		}
		out := filepath.Join(outDir, f.Rel)
		if err := writeIfChanged(out, src); err != nil {
			return err
		}
		u.files[f.Path] = out
	}
	u.pkg.Files += rw.NumFiles
	u.pkg.NumSites += rw.NumSites
	fmt.Fprintf(b.log, "wafl: instrumented %s: %d files, %d sites\n", u.pkg.ImportPath, u.pkg.Files, u.pkg.NumSites)
	return nil
}
