package build

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/reach"
)

// The build store keeps the last builds, shared by every work directory:
// a prepare in a fresh work directory (a new checkout's .wafl, a CI job,
// a script's temporary directory) whose build is the same as one made
// before (the fingerprint of cache.go without the work directory's
// path: the same wafl, go command and environment, configuration and
// files) takes its test binaries, site tables and reach files from the
// store instead of loading, type-checking, rewriting and linking again.
// The go command's build cache plays this part for go test's compiled
// packages; go test still links, which wafl's store spares too.
//
// An entry is a directory named by the fingerprint under
// os.UserCacheDir()/wafl/builds, with state.json (the build's
// buildState, the files named relative to the entry, each package's
// binary also by its path relative to the work directory) and the
// files. It is written into a temporary directory and renamed into
// place. Files are hard links where the file system allows (copies
// otherwise) in both directions; a binary is used only when it still
// hashes as it did when stored. The store keeps storeEntries entries, the
// least recently used go first. WAFL_REBUILD=1 turns it off with the
// work directory's reuse; WAFL_BUILD_STORE=off turns off only the store,
// WAFL_BUILD_STORE=DIR puts it in DIR.

// storeEntries is how many builds the store keeps.
const storeEntries = 8

// storeRoot returns the build store's directory: WAFL_BUILD_STORE when it
// names one, "" when it is "off" or the user has no cache directory.
func storeRoot() string {
	switch v := strings.TrimSpace(os.Getenv("WAFL_BUILD_STORE")); v {
	case "off":
		return ""
	case "":
	default:
		return v
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "wafl", "builds")
}

// storeName is the entry directory's name for fingerprint fp.
func storeName(fp string) string {
	name := strings.TrimPrefix(fp, "sha256:")
	return name[:min(len(name), 32)]
}

// toStore puts the build res, made in work directory work with the test
// binaries' hashes, into the store at root under the shared fingerprint
// fp, unless a package failed (as saveBuild) or the store has the entry.
// Failures only mean that the store does not get it.
func toStore(root, fp, work string, res *Result, hashes map[string]string) {
	if root == "" || fp == "" {
		return
	}
	dir := filepath.Join(root, storeName(fp))
	if _, err := os.Stat(dir); err == nil {
		return
	}
	st := newBuildState(fp, res, hashes)
	if st == nil {
		return
	}
	// The files go into the entry as p<i>.*; each binary keeps its path
	// relative to the work directory, where fromStore puts it back.
	type file struct{ src, name string }
	var files []file
	for i, bp := range st.Packages {
		if bp.NoTestFiles {
			continue
		}
		rel, err := filepath.Rel(work, bp.Binary)
		if err != nil || !filepath.IsLocal(rel) {
			return
		}
		base := "p" + strconv.Itoa(i)
		files = append(files, file{bp.Binary, base + ".test"}, file{bp.Sites, base + ".sites.json"})
		if src := reach.PathFor(bp.Sites); fileExists(src) {
			files = append(files, file{src, reach.PathFor(base + ".sites.json")})
		}
		bp.Binary, bp.Sites, bp.Rel = base+".test", base+".sites.json", rel
	}
	if len(st.Packages) == 0 || os.MkdirAll(root, 0o755) != nil {
		return
	}
	tmp, err := os.MkdirTemp(root, "tmp-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp)
	for _, f := range files {
		if linkFile(f.src, filepath.Join(tmp, f.name)) != nil {
			return
		}
	}
	if writeJSON(filepath.Join(tmp, "state.json"), st) != nil || os.Rename(tmp, dir) != nil {
		return
	}
	trimStore(root, storeEntries)
}

// fromStore returns the build of shared fingerprint fp from the store at
// root, its files linked into work directory work where the build would
// have put them, and the binaries' hashes; nil when the store has no such
// entry or one of its binaries no longer hashes as stored.
func fromStore(root, fp, work string) (*Result, map[string]string) {
	if root == "" || fp == "" {
		return nil, nil
	}
	dir := filepath.Join(root, storeName(fp))
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return nil, nil
	}
	var st buildState
	if json.Unmarshal(data, &st) != nil || st.Fingerprint != fp || len(st.Packages) == 0 {
		return nil, nil
	}
	hashes := map[string]string{}
	for _, bp := range st.Packages {
		if bp.NoTestFiles {
			continue
		}
		if !filepath.IsLocal(bp.Rel) || !filepath.IsLocal(bp.Binary) || !filepath.IsLocal(bp.Sites) {
			return nil, nil
		}
		if h, err := abi.HashFile(filepath.Join(dir, bp.Binary)); err != nil || h != bp.Hash {
			return nil, nil
		}
		hashes[bp.ImportPath] = bp.Hash
	}
	for _, bp := range st.Packages {
		if bp.NoTestFiles {
			continue
		}
		bin := filepath.Join(work, bp.Rel)
		sitesPath := sitesPathFor(bin)
		if linkFile(filepath.Join(dir, bp.Binary), bin) != nil || linkFile(filepath.Join(dir, bp.Sites), sitesPath) != nil {
			return nil, nil
		}
		if src := reach.PathFor(filepath.Join(dir, bp.Sites)); fileExists(src) {
			if linkFile(src, reach.PathFor(sitesPath)) != nil {
				return nil, nil
			}
		} else {
			os.Remove(reach.PathFor(sitesPath))
		}
		bp.Binary, bp.Sites = bin, sitesPath
	}
	now := time.Now()
	os.Chtimes(dir, now, now) // recently used: trimStore keeps it
	return st.result(work), hashes
}

// trimStore removes the least recently used entries of the store at root
// beyond keep, and temporary directories left by an interrupted toStore
// more than an hour old.
func trimStore(root string, keep int) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	type entry struct {
		path string
		mod  time.Time
	}
	var es []entry
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !e.IsDir() {
			continue
		}
		path := filepath.Join(root, e.Name())
		if strings.HasPrefix(e.Name(), "tmp-") {
			if time.Since(info.ModTime()) > time.Hour {
				os.RemoveAll(path)
			}
			continue
		}
		es = append(es, entry{path, info.ModTime()})
	}
	slices.SortFunc(es, func(a, b entry) int { return b.mod.Compare(a.mod) })
	for _, e := range es[min(keep, len(es)):] {
		os.RemoveAll(e.path)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
