package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/pipeline/workdir"
)

// The build is skipped when nothing it depends on changed: wafl runs prepare and detect again and again on the same source, and
// loading and type-checking the module, rewriting it and asking the go
// command whether the binaries are current costs seconds every time. After
// a build in which every package built (or has no test files), the result
// is saved with a fingerprint of everything the build read:
//
//   - this wafl executable (its rewriting rules and the runtime it embeds);
//   - the build's configuration (directory, patterns, tags, --instrument);
//   - the go command and its environment (`go env -json`: toolchain
//     version, GOFLAGS, GOOS/GOARCH, CGO settings, ...);
//   - every file the build reads under the module root (path, size,
//     modification time; hashTree says which), but in .git and the work
//     directory, and under each directory a local replace directive of
//     go.mod points to; dependencies from the module cache are fixed by
//     go.mod and go.sum, which are among those files.
//
// The next build with the same fingerprint, whose binaries still hash as
// they did, reuses the result. A build in another work directory finds the
// same build in the build store (store.go), keyed by the fingerprint
// without the work directory. Anything else builds as before.

// buildState is the saved result of a build (work/build/state.json).
type buildState struct {
	Fingerprint string          `json:"fingerprint"`
	Sites       int             `json:"sites"`
	Packages    []*builtPackage `json:"packages"`
}

// builtPackage is an Package with its binary's hash.
type builtPackage struct {
	ImportPath  string   `json:"import_path"`
	Dir         string   `json:"dir"`
	Binary      string   `json:"binary,omitempty"`
	Rel         string   `json:"rel,omitempty"` // in the build store: Binary's path relative to the work directory
	Sites       string   `json:"sites,omitempty"`
	Hash        string   `json:"hash,omitempty"`
	Files       int      `json:"files,omitempty"`
	NumSites    int      `json:"num_sites,omitempty"`
	Tests       []string `json:"tests,omitempty"`
	NoDelay     []string `json:"no_delay,omitempty"`
	Skipped     []string `json:"skipped,omitempty"`
	NoTestFiles bool     `json:"no_test_files,omitempty"`
}

// racyWindow: a build whose fingerprint saw a file modified less than this
// long before is not saved. A file written again within the file system's
// time resolution of its previous write, with the same size, would keep
// its fingerprint (git's "racy" files); a build that follows its sources'
// edits that closely is simply not reused.
const racyWindow = 2 * time.Second

// buildFingerprint hashes everything a build of cfg depends on (see
// above): fp for the work directory, shared (the same but the work
// directory's path) for the build store. racy says a file was modified
// within racyWindow.
func buildFingerprint(ctx context.Context, cfg Config, ws *workdir.Dir) (fp, shared string, racy bool, err error) {
	shared, racy, err = sharedFingerprint(ctx, cfg, ws)
	if err != nil {
		return "", "", false, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\nwork directory %q\n", shared, cfg.WorkDir)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), shared, racy, nil
}

// sharedFingerprint is buildFingerprint's shared fingerprint.
func sharedFingerprint(ctx context.Context, cfg Config, ws *workdir.Dir) (fp string, racy bool, err error) {
	start := time.Now()
	h := sha256.New()
	self, err := os.Executable()
	if err != nil {
		return "", false, err
	}
	selfHash, err := abi.HashFile(self)
	if err != nil {
		return "", false, err
	}
	fmt.Fprintf(h, "wafl %s\n", selfHash)
	c, err := json.Marshal(struct {
		Dir                        string
		Patterns, Tags, Instrument []string
	}{cfg.Dir, cfg.Patterns, cfg.Tags, cfg.Instrument})
	if err != nil {
		return "", false, err
	}
	fmt.Fprintf(h, "config %s\n", c)
	cmd := exec.CommandContext(ctx, "go", "env", "-json")
	cmd.Dir = ws.Run
	cmd.Env = append(os.Environ(), "GOWORK=off") // as instrument builds
	out, err := cmd.Output()
	if err != nil {
		return "", false, fmt.Errorf("go env: %w", err)
	}
	var env map[string]any
	if err := json.Unmarshal(out, &env); err != nil {
		return "", false, fmt.Errorf("go env -json: %w", err)
	}
	// GOGCCFLAGS names a temporary directory of the go env command itself.
	delete(env, "GOGCCFLAGS")
	if out, err = json.Marshal(env); err != nil { // sorted keys
		return "", false, err
	}
	fmt.Fprintf(h, "go env %s\n", out)
	dirs := []string{ws.Root}
	if data, err := os.ReadFile(filepath.Join(ws.Root, "go.mod")); err == nil {
		if mf, err := modfile.ParseLax("go.mod", data, nil); err == nil {
			for _, r := range mf.Replace {
				if modfile.IsDirectoryPath(r.New.Path) {
					d := r.New.Path
					if !filepath.IsAbs(d) {
						d = filepath.Join(ws.Root, d)
					}
					dirs = append(dirs, filepath.Clean(d))
				}
			}
		}
	}
	var newest time.Time
	for _, d := range dirs {
		if err := hashTree(h, d, ws.Work, &newest); err != nil {
			return "", false, err
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), start.Sub(newest) < racyWindow, nil
}

// hashTree writes the path, size, mode and modification time of every file
// under root that a build may read, but under .git directories and skip,
// to h, and keeps the latest modification time in newest. A build reads
// the Go, assembly and cgo sources (buildInput), go.mod, go.sum and
// vendor/modules.txt, and the files //go:embed directives name (found by
// reading the Go files that have one; a pattern matching a directory
// names every file under it); other files are left out, so that a test
// that writes a file into its package directory (a log, a socket, a
// golden file) does not make the next build look changed.
func hashTree(h interface{ Write([]byte) (int, error) }, root, skip string, newest *time.Time) error {
	fmt.Fprintf(h, "tree %s\n", root)
	add := func(path string, fi fs.FileInfo) {
		fmt.Fprintf(h, "%q %d %o %d\n", path, fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		if fi.ModTime().After(*newest) {
			*newest = fi.ModTime()
		}
	}
	var embeds []string // embedded files and directories, in walk order
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking: the next build sees it
			}
			return err
		}
		if d.IsDir() {
			if path == skip || d.Name() == ".git" && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !buildInput(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		add(path, fi)
		if strings.HasSuffix(path, ".go") {
			embeds = append(embeds, embedded(path)...)
		}
		return nil
	})
	if err != nil || len(embeds) == 0 {
		return err
	}
	fmt.Fprintf(h, "embedded\n")
	return hashEmbedded(embeds, skip, add)
}

// hashEmbedded adds the files at paths, and every file under those that
// are directories, with add.
func hashEmbedded(paths []string, skip string, add func(string, fs.FileInfo)) error {
	return walkEach(paths, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or not readable: the go command will say
		}
		if d.IsDir() {
			if path == skip || d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if fi, err := d.Info(); err == nil {
			add(path, fi)
		}
		return nil
	})
}

func walkEach(roots []string, fn fs.WalkDirFunc) error {
	for _, r := range roots {
		if err := filepath.WalkDir(r, fn); err != nil {
			return err
		}
	}
	return nil
}

// buildInput reports whether a file named name is one the go command
// reads when it builds (without //go:embed).
func buildInput(name string) bool {
	switch name {
	case "go.mod", "go.sum", "go.work", "go.work.sum", "modules.txt":
		return true
	}
	switch filepath.Ext(name) {
	case ".go", ".s", ".S", ".sx", ".c", ".h", ".hh", ".hpp", ".hxx", ".cc", ".cpp", ".cxx",
		".m", ".f", ".F", ".for", ".f90", ".syso", ".swig", ".swigcxx", ".inc":
		return true
	}
	return false
}

// embedded returns what the //go:embed directives of the Go file at path
// match (files and directories, as filepath.Glob finds them beside the
// file); a file that cannot be read embeds its whole directory.
func embedded(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{filepath.Dir(path)}
	}
	if !bytes.Contains(data, []byte("//go:embed")) {
		return nil
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "//go:embed")
		if !ok {
			continue
		}
		for _, pat := range embedPatterns(rest) {
			pat = strings.TrimPrefix(pat, "all:")
			matches, err := filepath.Glob(filepath.Join(filepath.Dir(path), filepath.FromSlash(pat)))
			if err != nil {
				return []string{filepath.Dir(path)}
			}
			out = append(out, matches...)
		}
	}
	return out
}

// embedPatterns splits the patterns of a //go:embed line: separated by
// spaces, each bare or a Go string literal.
func embedPatterns(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' || s[0] == '`' {
			q := s[0]
			end := strings.IndexByte(s[1:], q)
			for q == '"' && end > 0 && s[end] == '\\' { // an escaped quote
				next := strings.IndexByte(s[end+2:], q)
				if next < 0 {
					end = -1
					break
				}
				end += 1 + next
			}
			if end < 0 {
				return append(out, s)
			}
			lit := s[:end+2]
			if v, err := strconv.Unquote(lit); err == nil {
				out = append(out, v)
			}
			s = s[end+2:]
			continue
		}
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// reuseBuild returns the saved result of the last build when its
// fingerprint is fp and every binary and site table it names is still
// there; nil otherwise. The caller hashes the binaries, as after a build,
// and builds after all when a hash is not the saved one.
func reuseBuild(ws *workdir.Dir, fp string) *buildState {
	data, err := os.ReadFile(ws.BuildStatePath())
	if err != nil {
		return nil
	}
	var st buildState
	if json.Unmarshal(data, &st) != nil || st.Fingerprint != fp || len(st.Packages) == 0 {
		return nil
	}
	for _, p := range st.Packages {
		if p.NoTestFiles {
			continue
		}
		if p.Binary == "" || p.Hash == "" {
			return nil
		}
		for _, f := range []string{p.Binary, p.Sites} {
			if _, err := os.Stat(f); err != nil {
				return nil
			}
		}
	}
	return &st
}

// newBuildState returns the saved form of build res under fingerprint fp
// with the binaries' hashes, or nil when a package failed (or has no
// hash): such a build is neither reused nor stored.
func newBuildState(fp string, res *Result, hashes map[string]string) *buildState {
	st := &buildState{Fingerprint: fp, Sites: res.Sites}
	for _, p := range res.Packages {
		bp := &builtPackage{ImportPath: p.ImportPath, Dir: p.Dir, Tests: p.Tests, NoDelay: p.NoDelay, Skipped: p.Skipped}
		switch {
		case errors.Is(p.Err, ErrNoTestFiles):
			bp.NoTestFiles = true
		case p.Err != nil || hashes[p.ImportPath] == "":
			return nil
		default:
			bp.Binary, bp.Sites, bp.Hash = p.Binary, p.Sites, hashes[p.ImportPath]
			bp.Files, bp.NumSites = p.Files, p.NumSites
		}
		st.Packages = append(st.Packages, bp)
	}
	return st
}

// saveBuild saves the result of a build in which no package failed, under
// fingerprint fp; after any failure it removes the saved state, so that
// the next run builds again.
func saveBuild(ws *workdir.Dir, fp string, res *Result, hashes map[string]string) {
	path := ws.BuildStatePath()
	st := newBuildState(fp, res, hashes)
	if st == nil {
		os.Remove(path)
		return
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return
	}
	tmp := path + ".new"
	if os.WriteFile(tmp, append(data, '\n'), 0o644) != nil || os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}

// result turns a saved build back into what Build returns.
func (st *buildState) result(work string) *Result {
	res := &Result{WorkDir: work, Sites: st.Sites}
	for _, bp := range st.Packages {
		p := &Package{
			ImportPath: bp.ImportPath, Dir: bp.Dir, Binary: bp.Binary, Sites: bp.Sites,
			Files: bp.Files, NumSites: bp.NumSites, Tests: bp.Tests, NoDelay: bp.NoDelay, Skipped: bp.Skipped,
		}
		if bp.NoTestFiles {
			p.Err = ErrNoTestFiles
		}
		res.Packages = append(res.Packages, p)
	}
	return res
}

// check hashes the saved build's binaries and returns the hashes by
// import path, or nil when one is not the hash saved with it.
func (st *buildState) check() map[string]string {
	m := map[string]string{}
	for _, bp := range st.Packages {
		if bp.NoTestFiles {
			continue
		}
		h, err := abi.HashFile(bp.Binary)
		if err != nil || h != bp.Hash {
			return nil
		}
		m[bp.ImportPath] = h
	}
	return m
}

// noBuildCache turns the reuse off (WAFL_REBUILD=1): every run builds.
func noBuildCache() bool { return strings.TrimSpace(os.Getenv("WAFL_REBUILD")) == "1" }

// Cached builds cfg, or reuses the last build in the work directory ws
// when nothing it read has changed since (the fingerprint above; the
// environment variable WAFL_REBUILD=1 always builds). It returns the build
// and the hash of every test binary it made, keyed by import path. log
// receives a line saying which it did.
func Cached(ctx context.Context, cfg Config, ws *workdir.Dir, log io.Writer) (*Result, map[string]string, error) {
	fp, shared, racy := "", "", false
	if !noBuildCache() {
		var err error
		if fp, shared, racy, err = buildFingerprint(ctx, cfg, ws); err != nil {
			fmt.Fprintf(log, "wafl: build fingerprint: %v (building)\n", err)
			fp, shared = "", ""
		} else if st := reuseBuild(ws, fp); st != nil {
			if res, hashes := st.result(ws.Work), st.check(); hashes != nil {
				fmt.Fprintf(log, "wafl: nothing changed since the last build (%s): its test binaries are reused\n", fp[:min(len(fp), 19)])
				res.From = FromWorkDir
				return res, hashes, nil
			}
			fmt.Fprintf(log, "wafl: a test binary changed since the last build: building\n")
		}
		if !racy {
			if res, hashes := fromStore(storeRoot(), shared, ws.Work); res != nil {
				fmt.Fprintf(log, "wafl: the same build is in the build store (%s): its test binaries are reused\n", shared[:min(len(shared), 19)])
				saveBuild(ws, fp, res, hashes)
				res.From = FromStore
				return res, hashes, nil
			}
		}
	}
	res, err := Build(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	hashes := map[string]string{}
	for _, p := range res.Packages {
		if p.Err == nil {
			if h, err := abi.HashFile(p.Binary); err == nil {
				hashes[p.ImportPath] = h
			} else {
				p.Err = err
			}
		}
	}
	switch {
	case racy:
		os.Remove(ws.BuildStatePath()) // a file changed just now: build again next time
	case fp != "":
		saveBuild(ws, fp, res, hashes)
		toStore(storeRoot(), shared, ws.Work, res, hashes)
	}
	return res, hashes, nil
}
