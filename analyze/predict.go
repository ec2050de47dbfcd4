package analyze

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

// Predicted partners (docs/algorithm.md, "Predicted partners"): wafl's
// extension of the thesis for a goroutine that was late in the recorded
// run. The thesis builds a candidate pair only from two accesses the trace
// saw; when the racing goroutine had not reached its access before the
// test ended, the trace holds one side of the pair and the plan none.
//
// Rule. A late goroutine is a child whose fork row (written when the
// child starts) is its only trace — it never reached an instrumented
// access — or the child of a go row without a fork row: it never ran (τf
// is then the go row's time). Goroutines whose go statement has a static
// reach get static pairs instead (static.go). For each dispose row d
// (τd, goroutine gd, site ℓd) with 0 ≤ τd − τf < δ after τf of a late
// child c, concurrent with c by fork order, and for each use site ℓu of
// the site table that the test may reach (every use site when the reach
// does not know the test) with the same field key as ℓd (the slot
// expression's last selector and, when both are known, the static slot
// type; see SiteInfo) that has no candidate pair with ℓd yet, the pair
// (ℓu → ℓd) of kind use-after-dispose
// is predicted: gap τd − τf (the latest the late goroutine's use could
// have come before the dispose, so that α × gap delays ℓu past ℓd), the
// interference window [τf − δ, τd] of gd. At most maxPredicted pairs per
// analysis; predicted pairs are marked (Pair.From "predicted") and
// counted (Stats.Predicted), and the detection runs' decay and HB
// inference drop them like any pair when they never help.

// SiteInfo is what prediction needs of a site-table entry.
type SiteInfo struct {
	// Kind is the site table's kind ("use", "load", "atomic-load",
	// "send", "close", "store", ...).
	Kind string
	// Field is the last selector of the slot expression ("conn" for
	// "c.conn"), empty when the expression is not a selector.
	Field string
	// Type is the static slot type ("" when unknown).
	Type string
	// Dir is the directory of the site's file (the package), compared
	// when a type is unknown.
	Dir string
	// Entry says the site is a map entry's ("w.wd[k]"): its Field is its
	// map's, and it never matches a site of the map field itself, whose
	// type may be unknown (a type parameter) where the entry's is not.
	Entry bool
	// Section is the position ("file:line:col") of the Lock or RLock
	// call of the critical section the site is in (its guard, or for a
	// check its held lock), Lock its lock's identity (LockOf) and Excl
	// whether the call is Lock; empty when none is known.
	Section, Lock string
	Excl          bool
}

// InSection returns si inside the critical section of the lock call
// (source text "s.mu.Lock()") at file:line:col.
func (si SiteInfo) InSection(call, file string, line, col int) SiteInfo {
	recv, excl := strings.CutSuffix(call, ".Lock()")
	if !excl {
		recv = strings.TrimSuffix(call, ".RLock()")
	}
	si.Section = fmt.Sprintf("%s:%d:%d", file, line, col)
	si.Lock = LockOf(recv, path.Dir(file))
	si.Excl = excl
	return si
}

// LockOf is a lock's identity, as hoisting compares locks: the field its
// receiver selects ("mu" of "s.mu"), else the receiver's text, with the
// package directory.
func LockOf(recv, dir string) string {
	if f := FieldOf(recv); f != "" {
		recv = f
	}
	return dir + ":" + recv
}

// FieldOf is the last selector of a slot expression: "conn" for
// "c.conn" or "s.cl.conn", "" for a plain identifier or anything else.
// A map entry's expression "w.wd[k]" (instrument's site text of a map
// entry or a sync.Map's) has its map's field, "wd": every entry of one
// map field is one slot identity, whatever the key (the guessed side of
// a static or predicted pair has no object, and so no key either).
func FieldOf(expr string) string {
	if m, ok := indexedExpr(expr); ok {
		expr = m
	}
	i := len(expr) - 1
	for i >= 0 && (isIdent(expr[i])) {
		i--
	}
	if i < 0 || i == len(expr)-1 || expr[i] != '.' {
		return ""
	}
	return expr[i+1:]
}

// indexedExpr returns x of an expression "x[k]" (the brackets matched
// from the end), and whether expr is one.
func indexedExpr(expr string) (string, bool) {
	if !strings.HasSuffix(expr, "]") {
		return "", false
	}
	depth := 0
	for i := len(expr) - 1; i > 0; i-- {
		switch expr[i] {
		case ']':
			depth++
		case '[':
			depth--
			if depth == 0 {
				return expr[:i], true
			}
		}
	}
	return "", false
}

func isIdent(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}

// NewSiteInfo builds a SiteInfo from a site table entry's fields.
func NewSiteInfo(kind, expr, typ, file string) SiteInfo {
	_, entry := indexedExpr(expr)
	return SiteInfo{Kind: kind, Field: FieldOf(expr), Type: typ, Dir: path.Dir(file), Entry: entry}
}

// maxPredicted bounds the predicted pairs of one analysis.
const maxPredicted = 32

// useKind reports whether sites of the kind record use rows.
func useKind(kind string) bool {
	switch kind {
	case "use", "load", "atomic-load", "send":
		return true
	}
	return false
}

// sameField reports whether two sites name the same field: equal field
// keys, and equal types when both are known, or the same package
// directory when a type is unknown.
func sameField(a, b SiteInfo) bool {
	if a.Field == "" || a.Field != b.Field || a.Entry != b.Entry {
		return false
	}
	if a.Type != "" && b.Type != "" {
		return a.Type == b.Type
	}
	return a.Dir == b.Dir
}

// forkRow is a fork row kept for prediction: parent started child at τ
// (the child's adoption), the parent's counter then being clock.
type forkRow struct {
	t      int64
	child  uint64
	parent uint64
	clock  uint32
}

// goRow is a go row: parent executed the go statement at site at τ, its
// counter then being clock.
type goRow struct {
	t      int64
	parent uint64
	clock  uint32
	site   uint32
}

// lateTracker collects, during pass 1, the fork and go rows, the
// goroutines that have rows of their own with the time of their last
// row, and (for static pairs) which sites the trace shows.
type lateTracker struct {
	forks []forkRow
	gos   []goRow
	ran   map[uint64]int64 // goroutine -> time of its last row (filled by flush)
	// during pass 1, the goroutines that ran and the time of their last
	// row: open addressing over (goroutine, time) slots, no Go map on the
	// per-row path
	gt   []ranSlot
	gtN  int   // slots in use
	gtSh uint8 // 64 − log2(len(gt))
	// seen: the sites of access and check rows, direct-mapped by id
	// (a collision forgets a site: it only ranks static pairs); the table
	// grows on collisions (see), from 256 slots up to 1<<16.
	seen     []uint32
	seenMask uint32
	// goOf: the go statement each child came from (filled by lates)
	goOf map[uint64]uint32
}

// newLateTracker returns a tracker that keeps the sites it saw, up to
// maxSite, if sites is set.
func newLateTracker(sites bool) *lateTracker {
	l := &lateTracker{ran: make(map[uint64]int64), gt: make([]ranSlot, 64), gtSh: 64 - 6}
	if sites {
		l.seen, l.seenMask = make([]uint32, 256), 255
	}
	return l
}

// see adds site to seen, growing the table while two sites collide in
// it (up to 1<<16 slots, where only ids 1<<16 apart do).
func (l *lateTracker) see(site uint32) {
	for {
		e := &l.seen[site&l.seenMask]
		if *e == site {
			return
		}
		if *e == 0 || l.seenMask == 1<<16-1 {
			*e = site
			return
		}
		old := l.seen
		n := min(4*len(old), 1<<16)
		l.seen, l.seenMask = make([]uint32, n), uint32(n-1)
		for _, s := range old {
			if s != 0 {
				l.seen[s&l.seenMask] = s
			}
		}
	}
}

// ranSlot is a slot of the lateTracker's table: goroutine g ran, its last
// row at t (math.MinInt64: only as the parent of fork rows).
type ranSlot struct {
	g    uint64
	t    int64
	used bool
}

// ranAt notes that goroutine g had a row at τ: the table keeps the
// latest τ per goroutine (math.MinInt64 marks a goroutine seen only as a
// fork row's parent).
func (l *lateTracker) ranAt(g uint64, t int64) {
	h := (g * 0x9E3779B97F4A7C15) >> l.gtSh
	mask := uint64(len(l.gt) - 1)
	for {
		e := &l.gt[h]
		if e.used && e.g == g {
			e.t = max(e.t, t)
			return
		}
		if !e.used {
			break
		}
		h = (h + 1) & mask
	}
	if 2*(l.gtN+1) > len(l.gt) {
		l.growGT()
		l.ranAt(g, t)
		return
	}
	l.gt[h] = ranSlot{g: g, t: t, used: true}
	l.gtN++
}

func (l *lateTracker) growGT() {
	old := l.gt
	l.gt = make([]ranSlot, 2*len(old))
	l.gtSh--
	mask := uint64(len(l.gt) - 1)
	for _, e := range old {
		if !e.used {
			continue
		}
		h := (e.g * 0x9E3779B97F4A7C15) >> l.gtSh
		for l.gt[h].used {
			h = (h + 1) & mask
		}
		l.gt[h] = e
	}
}

// rows notes the rows of a batch of pass 1: fork and go rows kept in
// order, and every row's goroutine with its time (a fork row's parent
// with math.MinInt64: a fork row says its parent ran, its time is the
// child's). forkGo says the batch has fork or go rows.
func (l *lateTracker) rows(c *trace.Batch, forkGo bool) {
	n := c.Len()
	tm, gs := c.Time[:n], c.G[:n]
	ops := c.Op[:n]
	if forkGo {
		for i, op := range ops {
			switch abi.Op(op) {
			case abi.OpFork:
				l.forks = append(l.forks, forkRow{t: tm[i], child: c.Obj[i], parent: gs[i], clock: c.Clock[i]})
			case abi.OpGo:
				l.gos = append(l.gos, goRow{t: tm[i], parent: gs[i], clock: c.Clock[i], site: c.Site[i]})
			}
		}
	}
	// Runs of one goroutine cost a compare and a max.
	i := 0
	for i < n {
		g := gs[i]
		t := int64(math.MinInt64)
		for ; i < n && gs[i] == g; i++ {
			tt := tm[i]
			if abi.Op(ops[i]) == abi.OpFork {
				tt = math.MinInt64
			}
			t = max(t, tt)
		}
		l.ranAt(g, t)
	}
	if l.seen != nil {
		for _, s := range c.Site[:n] {
			if l.seen[s&l.seenMask] != s {
				l.see(s)
			}
		}
	}
}

// flush ends pass 1: the table's goroutines and times go into ran.
func (l *lateTracker) flush() {
	for _, e := range l.gt {
		if e.used {
			if old, ok := l.ran[e.g]; !ok || e.t > old {
				l.ran[e.g] = e.t
			}
		}
	}
}

// reached reports whether the trace showed a row at site (false
// negatives on collisions).
func (l *lateTracker) reached(site uint32) bool {
	return l.seen != nil && l.seen[site&l.seenMask] == site
}

// How a goroutine was late (lateG.how), in the order static pairs rank
// them.
const (
	neverRan = iota // a go row without a fork row
	noAccess        // a fork row and no row of its own
	ranShort        // rows of its own; the go statement's other paths were not taken
)

// lateG is a goroutine that was late in the run: it never ran, ran but
// reached no access, or ran (only for static pairs: the sites its go
// statement may reach and it did not). At is the latest time it could
// still have made a missing access: its go row, its fork row, its last
// row; from the time since which it was alive.
type lateG struct {
	at   int64
	from int64 // its go row's or fork row's time: alive since

	child  uint64 // 0: never ran
	parent uint64
	clock  uint32 // the parent's counter at the fork
	site   uint32 // its go statement, 0 when unknown (a callback)
	how    int
}

// lates returns the late goroutines: the go rows without a fork row, the
// children (of fork rows) with no row of their own, and, when short is
// set, the children of go statements that ran. It also fills l.goOf.
func (l *lateTracker) lates(short bool) []lateG {
	l.flush()
	type pk struct {
		g uint64
		c uint32
	}
	l.goOf = make(map[uint64]uint32, len(l.forks))
	goAt := make(map[pk]int, len(l.gos))
	for i, g := range l.gos {
		goAt[pk{g.parent, g.clock}] = i
	}
	forked := make(map[pk]bool, len(l.forks))
	var out []lateG
	for _, f := range l.forks {
		k := pk{f.parent, f.clock}
		forked[k] = true
		var site uint32
		from := f.t
		if i, ok := goAt[k]; ok {
			site, from = l.gos[i].site, min(from, l.gos[i].t)
			l.goOf[f.child] = site
		}
		last, ran := l.ran[f.child]
		switch {
		case !ran:
			out = append(out, lateG{at: f.t, from: from, child: f.child, parent: f.parent, clock: f.clock, site: site, how: noAccess})
		case short && site != 0:
			out = append(out, lateG{at: max(last, f.t), from: from, child: f.child, parent: f.parent, clock: f.clock, site: site, how: ranShort})
		}
	}
	for _, g := range l.gos {
		if !forked[pk{g.parent, g.clock}] {
			out = append(out, lateG{at: g.t, from: g.t, parent: g.parent, clock: g.clock, site: g.site, how: neverRan})
		}
	}
	return out
}

// lateCount counts the goroutines that never ran (go rows without a fork
// row) and those that ran but reached no row of their own (fork rows whose
// child has none): the goroutines of predicted and static pairs.
func (l *lateTracker) lateCount() int {
	l.flush()
	n := l.unstarted()
	for _, f := range l.forks {
		if _, ran := l.ran[f.child]; !ran {
			n++
		}
	}
	return n
}

// unstarted counts the go rows without a fork row.
func (l *lateTracker) unstarted() int {
	type pk struct {
		g uint64
		c uint32
	}
	forked := make(map[pk]bool, len(l.forks))
	for _, f := range l.forks {
		forked[pk{f.parent, f.clock}] = true
	}
	n := 0
	for _, g := range l.gos {
		if !forked[pk{g.parent, g.clock}] {
			n++
		}
	}
	return n
}

// predictPairs adds the predicted pairs to a.pairs (after the strategy's
// and the static pairs, and before the check-then-act pass, which
// consumes the dispose rows), and returns how many it added. The late
// goroutines are those that never ran and those that reached no access;
// the use sites are those of scope when it is not nil (the sites the
// test may reach), else every use site of the table.
func (a *analysis) predictPairs(info map[uint32]SiteInfo, lates []lateG, scope map[uint32]int) int {
	if len(info) == 0 || a.checks == nil || len(a.checks.disposes) == 0 {
		return 0
	}
	var late []lateG
	for _, lg := range lates {
		if lg.how != ranShort {
			late = append(late, lg)
		}
	}
	if len(late) == 0 {
		return 0
	}
	// The use sites of each field, once.
	type useSite struct {
		id uint32
		si SiteInfo
	}
	var uses []useSite
	for id, si := range info {
		if _, ok := scope[id]; (ok || scope == nil) && useKind(si.Kind) && si.Field != "" {
			uses = append(uses, useSite{id, si})
		}
	}
	slices.SortFunc(uses, func(x, y useSite) int { return int(x.id) - int(y.id) })
	// By field name, in id order: a dispose looks only at the uses of its
	// own field's name (sameField needs it), not at every use site.
	type fieldName struct {
		name  string
		entry bool
	}
	byField := map[fieldName][]useSite{}
	for _, u := range uses {
		k := fieldName{u.si.Field, u.si.Entry}
		byField[k] = append(byField[k], u)
	}
	p := newPairer(a.delta, a.forest.f)
	p.noFork = true // lateConcurrent decides
	added := map[pairKey]bool{}
	for _, d := range slices.Concat(a.checks.disposes...) {
		ds, ok := info[d.site]
		if !ok || ds.Field == "" {
			continue
		}
		uses := byField[fieldName{ds.Field, ds.Entry}]
		if len(uses) == 0 {
			continue
		}
		for i, f := range late {
			// A goroutine that never ran has no id: a stand-in that no
			// row has.
			g1 := f.child
			if g1 == 0 {
				g1 = math.MaxUint64 - uint64(i)
			}
			if g1 == d.g || !inWindow(f.at, d.t, a.delta) || !a.lateConcurrent(f, d.g, d.clock) {
				continue
			}
			for _, u := range uses {
				if !sameField(ds, u.si) {
					continue
				}
				k := pairKey{u.id, d.site, abi.OpUse}
				if _, ok := a.pairs[k]; ok && !added[k] {
					continue // the trace saw this pair, or it is static
				}
				if !added[k] && len(added) >= maxPredicted {
					continue
				}
				before := p.instances
				p.instance(k, d.obj, f.at, g1, 1, d.t, d.g, d.clock)
				if p.instances > before {
					added[k] = true
				}
			}
		}
	}
	if a.pairs == nil {
		a.pairs = make(map[pairKey]*pairAgg, len(p.pairs))
	}
	for k, v := range p.pairs {
		v.predicted = true
		a.pairs[k] = v
	}
	return len(p.pairs)
}
