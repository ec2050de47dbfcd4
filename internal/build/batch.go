package build

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memorder/wafl/instrument"
)

// buildBatch builds the test binaries of units in as few go commands as
// possible: one per overlay and per set of distinct binary names (go test
// -c -o DIR/ names each binary after its package's last path element). It
// returns the units it did not build — their package failed to build in
// the batch, or the batch could not run — so that the caller builds them
// alone and reports their own error.
//
// One go command for all packages is what makes the cold build cheap: the
// packages the test binaries share (the standard library, wafl's runtime,
// the module's instrumented packages) are compiled once, where parallel
// go commands each compiled them for themselves until the cache had them,
// and the go command keeps every CPU busy.
func (b *builder) buildBatch(ctx context.Context, units []*unit, modfile string, overlay func(*unit) string, alloc *instrument.SiteAlloc) (rest []*unit) {
	type key struct {
		overlay string
		round   int
	}
	var order []key
	batches := map[key][]*unit{}
	seen := map[[2]string]int{} // (overlay, binary name) → units so far
	for _, u := range units {
		ov := overlay(u)
		name := testBinaryName(u.pkg.ImportPath)
		k := key{ov, seen[[2]string{ov, name}]}
		seen[[2]string{ov, name}]++
		if batches[k] == nil {
			order = append(order, k)
		}
		batches[k] = append(batches[k], u)
	}
	for i, k := range order {
		us := batches[k]
		if len(us) == 1 {
			rest = append(rest, us...)
			continue
		}
		rest = append(rest, b.runBatch(ctx, i, us, modfile, k.overlay, alloc)...)
	}
	return rest
}

// runBatch builds the test binaries of us (distinct binary names) in one
// go command and returns the units without a binary afterwards.
//
// The binaries stay in the batch's output directory between builds and
// bin/ gets hard links to them: the go command does not link a test binary
// again when the one at its -o path has the build ID it would produce (it
// only touches its modification time), so a build in which nothing changed
// links nothing. A binary counts as built by this command when its
// modification time is not older than the command's start; one the command
// did not write (its package failed to build) keeps its old time and is
// built alone, for its own error.
func (b *builder) runBatch(ctx context.Context, n int, us []*unit, modfile, overlay string, alloc *instrument.SiteAlloc) (rest []*unit) {
	dir := filepath.Join(b.work, "build", "batch-"+strconv.Itoa(n))
	out := filepath.Join(dir, "bin")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return us
	}
	modfile, err := copyModfile(modfile, dir)
	if err != nil {
		return us
	}
	args := []string{"test", "-c", "-vet=off", "-o", out + string(filepath.Separator), "-overlay", overlay, "-modfile", modfile, "-mod=mod"}
	args = append(args, b.buildFlags()...)
	for _, u := range us {
		args = append(args, u.pkg.ImportPath)
		removeIfNotObject(filepath.Join(out, testBinaryName(u.pkg.ImportPath)))
	}
	// File times have the kernel's clock tick as resolution: allow for it.
	start := time.Now().Add(-mtimeSlack)
	if _, err := goCmd(ctx, b.modRoot, b.env, args...); err != nil {
		// Some packages failed (or the command did not run): those
		// without a binary are built alone below, for their own error.
		fmt.Fprintf(b.log, "wafl: building %d test binaries in one go command: %v\n", len(us), firstLine(err.Error()))
	}
	took := time.Since(start)
	for _, u := range us {
		src := filepath.Join(out, testBinaryName(u.pkg.ImportPath))
		bin := filepath.Join(b.work, "bin", filepath.FromSlash(u.pkg.ImportPath)+".test")
		if fi, err := os.Stat(src); err != nil || fi.ModTime().Before(start) {
			rest = append(rest, u)
			continue
		}
		if err := linkFile(src, bin); err != nil {
			rest = append(rest, u)
			continue
		}
		b.built(u, bin, alloc, took)
	}
	return rest
}

// mtimeSlack is how much older than the go command's start a binary it
// wrote or touched may look.
const mtimeSlack = 50 * time.Millisecond

// linkFile makes dst a hard link to src (a copy where links do not work),
// replacing dst.
func linkFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	si, err := os.Stat(src)
	if err != nil {
		return err
	}
	if di, err := os.Stat(dst); err == nil && os.SameFile(si, di) {
		return nil // already linked (renaming a link onto itself does nothing)
	}
	tmp := dst + ".new"
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dst)
}

// removeIfNotObject removes the file at path unless it starts like an
// executable: the go command refuses to write its -o output over a file
// that is not one ("already exists and is not an object file"), and a
// binary in bin/ written over in place (it is a hard link to the batch's
// output) must not stop the next build.
func removeIfNotObject(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	f.Close()
	for _, m := range []string{"\x7fELF", "MZ", "\xfe\xed\xfa\xce", "\xfe\xed\xfa\xcf", "\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe", "\x00asm"} {
		if strings.HasPrefix(string(magic[:n]), m) {
			return
		}
	}
	os.Remove(path)
}

// copyFile copies src to dst with src's permission bits.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// testBinaryName is the name go test -c -o DIR/ gives the test binary of
// the package at importPath: its last path element, or the one before a
// major version suffix (example.com/m/v2 → m), plus ".test".
func testBinaryName(importPath string) string {
	elem := path.Base(importPath)
	if elem != importPath && isVersionElement(elem) {
		elem = path.Base(path.Dir(importPath))
	}
	return elem + ".test"
}

// isVersionElement reports whether s is a major version suffix v2, v3, ...
func isVersionElement(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] == '0' || s[1] == '1' && len(s) == 2 {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
