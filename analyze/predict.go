package analyze

import (
	"path"
	"slices"

	"github.com/memorder/wafl/abi"
)

// Predicted partners (docs/algorithm.md, "Predicted partners"): wafl's
// extension of the thesis for a goroutine that was late in the recorded
// run. The thesis builds a candidate pair only from two accesses the trace
// saw; when the racing goroutine had not reached its access before the
// test ended, the trace holds one side of the pair and the plan none.
//
// Rule. A late goroutine is a child whose fork row (written when the
// child starts) is its only trace: it never reached an instrumented
// access. For each dispose row d (τd, goroutine gd, site ℓd) with
// 0 ≤ τd − τf < δ after the fork row (τf) of a late child c, concurrent
// with c by fork order, and for each use site ℓu of the site table with
// the same field key as ℓd (the slot expression's last selector and, when
// both are known, the static slot type; see SiteInfo) that has no
// candidate pair with ℓd yet, the pair (ℓu → ℓd) of kind use-after-dispose
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
}

// FieldOf is the last selector of a slot expression: "conn" for
// "c.conn" or "s.cl.conn", "" for a plain identifier or anything else.
func FieldOf(expr string) string {
	i := len(expr) - 1
	for i >= 0 && (isIdent(expr[i])) {
		i--
	}
	if i < 0 || i == len(expr)-1 || expr[i] != '.' {
		return ""
	}
	return expr[i+1:]
}

func isIdent(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}

// NewSiteInfo builds a SiteInfo from a site table entry's fields.
func NewSiteInfo(kind, expr, typ, file string) SiteInfo {
	return SiteInfo{Kind: kind, Field: FieldOf(expr), Type: typ, Dir: path.Dir(file)}
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
	if a.Field == "" || a.Field != b.Field {
		return false
	}
	if a.Type != "" && b.Type != "" {
		return a.Type == b.Type
	}
	return a.Dir == b.Dir
}

// forkRow is a fork row kept for prediction: parent started child at τ.
type forkRow struct {
	t      int64
	child  uint64
	parent uint64
}

// lateTracker collects, during pass 1, the fork rows and the goroutines
// that have rows of their own.
type lateTracker struct {
	forks []forkRow
	ran   map[uint64]struct{}
	last  uint64 // the goroutine of the last row added to ran
	any   bool
}

func newLateTracker() *lateTracker { return &lateTracker{ran: make(map[uint64]struct{})} }

// row notes a row of goroutine g (op) at τ; child is the fork row's child.
func (l *lateTracker) row(op abi.Op, t int64, g, child uint64) {
	if op == abi.OpFork {
		l.forks = append(l.forks, forkRow{t: t, child: child, parent: g})
	}
	// A fork row says its parent ran; any other row that its own
	// goroutine ran. Rows come in runs of one goroutine: one compare
	// for most rows.
	if l.any && g == l.last {
		return
	}
	l.ran[g] = struct{}{}
	l.last, l.any = g, true
}

// late returns the fork rows of children with no row of their own.
func (l *lateTracker) late() []forkRow {
	var out []forkRow
	for _, f := range l.forks {
		if _, ok := l.ran[f.child]; !ok {
			out = append(out, f)
		}
	}
	return out
}

// predictPairs adds the predicted pairs to a.pairs (after the strategy's
// pairs and before the check-then-act pass, which consumes the dispose
// rows), and returns how many it added.
func (a *analysis) predictPairs(info map[uint32]SiteInfo) int {
	if len(info) == 0 || a.late == nil || a.checks == nil || len(a.checks.disposes) == 0 {
		return 0
	}
	late := a.late.late()
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
		if useKind(si.Kind) && si.Field != "" {
			uses = append(uses, useSite{id, si})
		}
	}
	slices.SortFunc(uses, func(x, y useSite) int { return int(x.id) - int(y.id) })
	p := newPairer(a.delta, a.forest.f)
	p.noFork = a.noFork
	added := map[pairKey]bool{}
	for _, d := range slices.Concat(a.checks.disposes...) {
		ds, ok := info[d.site]
		if !ok || ds.Field == "" {
			continue
		}
		for _, f := range late {
			if f.child == d.g || !inWindow(f.t, d.t, a.delta) {
				continue
			}
			for _, u := range uses {
				if !sameField(ds, u.si) {
					continue
				}
				k := pairKey{u.id, d.site, abi.OpUse}
				if _, ok := a.pairs[k]; ok && !added[k] {
					continue // the trace saw this pair
				}
				if !added[k] && len(added) >= maxPredicted {
					continue
				}
				before := p.instances
				// The late child's first event (its counter starts at 1)
				// stands for its use.
				p.instance(k, d.obj, f.t, f.child, 1, d.t, d.g, d.clock)
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
