// Site ids: one place decides a site's number (sites.ID), so that it
// depends only on the package, the position and the kind of the site, not
// on what else the build matched.

package instrument

import (
	"fmt"
	"path/filepath"

	"github.com/memorder/wafl/instrument/sites"
)

// SiteAlloc hands out the site ids of one build and keeps its site table:
// every package of a build is rewritten with one SiteAlloc. A site's id is
// sites.ID(package, file base name, line, column, kind, expression,
// ordinal), where ordinal counts earlier sites of the same file with the
// same other components (two uses starting at one column, such as a.b and
// a.b.c). On the rare hash collision within a build the later site, in
// package and source order, takes the next free id and the build log says
// so (docs/instrumentation.md, "Site identity"). The zero value is ready
// to use; a SiteAlloc is not safe for concurrent rewriting.
type SiteAlloc struct {
	// Log, if not nil, receives a line for each site id collision.
	Log func(format string, args ...any)

	pkg   string // import path of the package being rewritten
	sites []sites.Site
	used  map[uint32]bool
	seen  map[string]int // key without ordinal -> sites so far
}

// Sites returns the site table so far: every site of the packages
// rewritten with a, in rewriting order. The caller must not modify it.
func (a *SiteAlloc) Sites() []sites.Site {
	return a.sites
}

// setPackage starts the sites of package pkg.
func (a *SiteAlloc) setPackage(pkg string) {
	a.pkg = pkg
	a.seen = nil
}

func (a *SiteAlloc) add(s sites.Site) uint32 {
	if a.used == nil {
		a.used = map[uint32]bool{}
	}
	if a.seen == nil {
		a.seen = map[string]int{}
	}
	file := filepath.Base(s.File)
	k := fmt.Sprintf("%s\x00%d\x00%d\x00%s\x00%s", file, s.Line, s.Col, s.Kind, s.Expr)
	ord := a.seen[k]
	a.seen[k] = ord + 1
	id := sites.ID(a.pkg, file, s.Line, s.Col, s.Kind, s.Expr, ord)
	first := id
	for a.used[id] {
		id = sites.NextID(id)
	}
	if id != first && a.Log != nil {
		a.Log("wafl: site id collision at %s:%d:%d (%s): %d taken, using %d\n", s.File, s.Line, s.Col, s.Kind, first, id)
	}
	a.used[id] = true
	s.ID = id
	a.sites = append(a.sites, s)
	return id
}
