package pipeline

import (
	"cmp"
	"os"
	"sync"
	"time"

	"github.com/memorder/wafl/analyze"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/internal/reach"
)

// slotTypeCache holds the site types of each site table the analyses of
// this process read (one table serves every test of a package).
var slotTypeCache struct {
	mu sync.Mutex
	m  map[string]slotTypesEntry
}

type slotTypesEntry struct {
	mod   time.Time
	size  int64
	types map[uint32]string
	infos map[uint32]analyze.SiteInfo
}

// slotTypes returns the slot types of the site table at path (site id ->
// the table's "type"), for analyze.Options.SlotTypes; nil when the table
// cannot be read (the analysis then keeps every pair).
func slotTypes(path string) map[uint32]string {
	return siteTable(path).types
}

// siteInfos returns what predicted partners need of each site of the site
// table at path (analyze.Options.Sites); nil when the table cannot be
// read (nothing is predicted).
func siteInfos(path string) map[uint32]analyze.SiteInfo {
	return siteTable(path).infos
}

// siteTable reads (or finds in the cache) the site table at path.
func siteTable(path string) slotTypesEntry {
	if path == "" {
		return slotTypesEntry{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return slotTypesEntry{}
	}
	c := &slotTypeCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[path]; ok && e.mod.Equal(fi.ModTime()) && e.size == fi.Size() {
		return e
	}
	tab, err := sites.Load(path)
	if err != nil {
		return slotTypesEntry{}
	}
	types := make(map[uint32]string, len(tab.Sites))
	infos := make(map[uint32]analyze.SiteInfo, len(tab.Sites))
	for _, s := range tab.Sites {
		if s.Type != "" {
			types[s.ID] = s.Type
		}
		si := analyze.NewSiteInfo(s.Kind, s.Expr, s.Type, s.File)
		if g := cmp.Or(s.Held, s.Guard); g != nil {
			si = si.InSection(g.Call, g.File, g.Line, g.Col)
		}
		infos[s.ID] = si
	}
	if c.m == nil {
		c.m = map[string]slotTypesEntry{}
	}
	e := slotTypesEntry{mod: fi.ModTime(), size: fi.Size(), types: types, infos: infos}
	c.m[path] = e
	return e
}

// reachCache holds the reach files the analyses of this process read
// (one file serves every test of a package).
var reachCache struct {
	mu sync.Mutex
	m  map[string]reachEntry
}

type reachEntry struct {
	mod  time.Time
	size int64
	f    *reach.File
}

// reachOf returns the reach file beside the site table at sitesPath, for
// analyze.Options.Reach; nil when there is none or it cannot be read (the
// analysis then makes no static pairs and does not scope its predicted
// partners).
func reachOf(sitesPath string) analyze.Reacher {
	if sitesPath == "" {
		return nil
	}
	path := reach.PathFor(sitesPath)
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	c := &reachCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[path]; ok && e.mod.Equal(fi.ModTime()) && e.size == fi.Size() {
		return e.f
	}
	f, err := reach.Load(path)
	if err != nil {
		return nil
	}
	if c.m == nil {
		c.m = map[string]reachEntry{}
	}
	c.m[path] = reachEntry{mod: fi.ModTime(), size: fi.Size(), f: f}
	return f
}
