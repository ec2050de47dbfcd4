package pipeline

import (
	"os"
	"sync"
	"time"

	"github.com/memorder/wafl/instrument/sites"
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
}

// slotTypes returns the slot types of the site table at path (site id ->
// the table's "type"), for analyze.Options.SlotTypes; nil when the table
// cannot be read (the analysis then keeps every pair).
func slotTypes(path string) map[uint32]string {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	c := &slotTypeCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[path]; ok && e.mod.Equal(fi.ModTime()) && e.size == fi.Size() {
		return e.types
	}
	tab, err := sites.Load(path)
	if err != nil {
		return nil
	}
	types := make(map[uint32]string, len(tab.Sites))
	for _, s := range tab.Sites {
		if s.Type != "" {
			types[s.ID] = s.Type
		}
	}
	if c.m == nil {
		c.m = map[string]slotTypesEntry{}
	}
	c.m[path] = slotTypesEntry{mod: fi.ModTime(), size: fi.Size(), types: types}
	return types
}
