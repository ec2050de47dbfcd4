// Site ids: one place decides a site's number (sites.ID), so that it
// depends only on the package, the position and the kind of the site, not
// on what else the build matched.

package instrument

import (
	"fmt"
	"path/filepath"

	"github.com/memorder/wafl/instrument/sites"
)

// siteAlloc hands out the site ids of one build. A site's id is
// sites.ID(package, file base name, line, column, kind, expression,
// ordinal), where ordinal counts earlier sites of the same file with the
// same other components (two uses starting at one column, such as a.b and
// a.b.c). On the rare hash collision within a build the later site, in
// package and source order, takes the next free id and the build log says
// so (docs/instrumentation.md, "Site identity").
type siteAlloc struct {
	pkg   string // import path of the package being rewritten
	sites []sites.Site
	used  map[uint32]bool
	seen  map[string]int // key without ordinal -> sites so far
	log   func(format string, args ...any)
}

// setPackage starts the sites of package pkg.
func (a *siteAlloc) setPackage(pkg string) {
	a.pkg = pkg
	a.seen = nil
}

func (a *siteAlloc) add(s sites.Site) uint32 {
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
	if id != first && a.log != nil {
		a.log("wafl: site id collision at %s:%d:%d (%s): %d taken, using %d\n", s.File, s.Line, s.Col, s.Kind, first, id)
	}
	a.used[id] = true
	s.ID = id
	a.sites = append(a.sites, s)
	return id
}
