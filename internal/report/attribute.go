package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

// Attribution ties a MEMORDER panic to the delay that exposed it.
type Attribution struct {
	Kind  plans.Kind
	Delay *Delay     // the injected delay at ℓ1
	Pair  plans.Pair // the candidate pair it exposed
	// Failing is the site the panicking goroutine was at and Frame the
	// stack frame that matched it (file:line of the site table).
	Failing uint32
	Frame   Frame
	// InProgress is set when the delay had not ended when the process
	// crashed; SameGoroutine when the panicking goroutine is the delayed
	// one.
	InProgress    bool
	SameGoroutine bool
	// Reordered is set for a use-before-init attributed through a logged
	// reorder: goroutine PartnerG ran ℓ2 (Pair.Second) during the delay.
	// Either PartnerG is the panicking goroutine and failed later, at
	// Failing, or (Stale) the delayed goroutine itself failed at Failing
	// after its delay, acting on what it read before it.
	Reordered bool
	Stale     bool
	PartnerG  int64
	// How says how the crash came about. For HowDecision and HowNatural
	// Delay is not a logged delay: its ID is 0, Site is ℓ1 and G the
	// goroutine that was deciding ℓ1's delay (0 if none).
	How How
}

// how sets How for an attribution to a logged delay.
func (a *Attribution) how() *Attribution {
	if a.InProgress {
		a.How = HowInProgress
	} else {
		a.How = HowAfterDelay
	}
	return a
}

// withPartner fills PartnerG, when the attribution does not name it, with
// the goroutine that reached ℓ2 on the delay's object during the delay (the
// log's reorder records), or with the panicking goroutine when that is not
// the delayed one (it ran ℓ2 and failed there).
func (a *Attribution) withPartner(lg *Log, panicking int64) *Attribution {
	if a.PartnerG != 0 || a.Delay == nil {
		return a
	}
	for _, r := range lg.Reorders {
		if a.Delay.ID != 0 && r.Delay == a.Delay.ID && r.Second == a.Pair.Second {
			a.PartnerG = int64(r.G)
			return a
		}
	}
	if panicking != int64(a.Delay.G) {
		a.PartnerG = panicking
	}
	return a
}

// allowed reports whether a panic of kind k can come from a bug of kind b:
// a use before init finds a zero slot (nil pointer, map, func or
// channel); a use after dispose finds a nil slot or a closed channel.
func allowed(b plans.Kind, k abi.PanicKind) bool {
	switch k {
	case abi.PanicNilDeref, abi.PanicNilMap, abi.PanicCloseNil, abi.PanicNilAssert:
		return true
	case abi.PanicSendClosed, abi.PanicCloseClosed:
		return b == plans.UseAfterDispose
	case abi.PanicWGNegative, abi.PanicWGReuse:
		// Done or Wait ran before the Add it pairs with (delayed Add).
		return b == plans.UseBeforeInit
	}
	return false
}

// siteIndex finds sites by file and line.
type siteIndex struct {
	byLine map[string][]uint32 // "file:line" → sites
	tab    *sites.Table
	files  map[string]bool // the site table's files, made on first use
}

func newSiteIndex(tab *sites.Table) *siteIndex {
	ix := &siteIndex{byLine: map[string][]uint32{}, tab: tab}
	if tab == nil {
		return ix
	}
	for _, s := range tab.Sites {
		k := fmt.Sprintf("%s:%d", filepath.Clean(s.File), s.Line)
		ix.byLine[k] = append(ix.byLine[k], s.ID)
		// A load's value is dereferenced further on: a crash there is a
		// crash at the load.
		for _, d := range s.Derefs {
			k := fmt.Sprintf("%s:%d", filepath.Clean(d.File), d.Line)
			if !contains(ix.byLine[k], s.ID) {
				ix.byLine[k] = append(ix.byLine[k], s.ID)
			}
		}
	}
	return ix
}

// lookup returns the sites on the frame's line. Absolute paths must match
// exactly; a relative path (a -trimpath build) matches a site file that
// ends with it.
func (ix *siteIndex) lookup(f Frame) []uint32 {
	if f.File == "" || f.Line == 0 {
		return nil
	}
	if filepath.IsAbs(f.File) {
		return ix.byLine[fmt.Sprintf("%s:%d", filepath.Clean(f.File), f.Line)]
	}
	var out []uint32
	if ix.tab == nil {
		return nil
	}
	suffix := "/" + filepath.ToSlash(f.File)
	for _, s := range ix.tab.Sites {
		if s.Line == f.Line && strings.HasSuffix(filepath.ToSlash(s.File), suffix) {
			out = append(out, s.ID)
			continue
		}
		for _, d := range s.Derefs {
			if d.Line == f.Line && strings.HasSuffix(filepath.ToSlash(d.File), suffix) {
				out = append(out, s.ID)
				break
			}
		}
	}
	return out
}

// inSiteFile reports whether frame f is in a file of the site table (a
// relative, -trimpath file matches a site file ending with it).
func (ix *siteIndex) inSiteFile(f Frame) bool {
	if f.File == "" || ix.tab == nil {
		return false
	}
	if ix.files == nil {
		ix.files = map[string]bool{}
		for _, s := range ix.tab.Sites {
			ix.files[filepath.ToSlash(filepath.Clean(s.File))] = true
		}
	}
	file := filepath.ToSlash(filepath.Clean(f.File))
	if filepath.IsAbs(f.File) {
		return ix.files[file]
	}
	for sf := range ix.files {
		if strings.HasSuffix(sf, "/"+file) {
			return true
		}
	}
	return false
}

// firstSiteFrame is the panicking goroutine's innermost frame outside the
// runtime, testing and wafl whose line holds sites, and those sites (nil
// when no frame has any).
func (ix *siteIndex) firstSiteFrame(g *Goroutine) (Frame, []uint32) {
	for _, f := range g.Frames {
		if internalFrame(f) {
			continue
		}
		if ids := ix.lookup(f); len(ids) > 0 {
			return f, ids
		}
	}
	return Frame{}, nil
}

func contains(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Attribute decides whether crash c is a MEMORDER bug exposed by a delay
// the run log lg records (docs/report-format.md, "Attribution"). It walks
// the panicking goroutine's frames outside the runtime, the testing
// package and the wafl runtime, from the innermost; at the first frame
// whose file:line holds sites of the site table that explain the panic:
//
//   - use-before-init: a delay injected at ℓ1 in another goroutine where
//     (ℓ1 → ℓ2) is a use-before-init pair and ℓ2 is on that line, still
//     in progress at the crash or with a reorder record showing the
//     panicking goroutine touched its object during it; delays in
//     progress are preferred, then the most recent;
//   - use-after-dispose: an ended delay at ℓ1, on that line, in the
//     panicking goroutine itself, where ℓ1 has a use-after-dispose pair.
//
// The panic must be one a bug of that kind produces. Failing that, a
// use-before-init is also attributed when the log shows the panicking
// goroutine touched the object of a delay at ℓ1 while that delay was in
// progress and the panic is at an instrumented site, or that the
// panicking goroutine is the delayed one and another goroutine touched
// its object during the delay (the stale case; see attributeReorder), and a
// check-then-act whose delayed goroutine lost the race and crashed at a
// line without sites (attributeLostCheck). Delays that began after the
// panicking goroutine's panic record are left out (beforePanic). When
// nothing matches it returns nil and the reason, for the ordinary-failure
// report.
func Attribute(p *plans.Plan, tab *sites.Table, lg *Log, c *Crash) (*Attribution, string) {
	if c == nil {
		return nil, "no panic"
	}
	if !c.Kind.Memorder() {
		return nil, fmt.Sprintf("panic %q is not a MEMORDER panic", c.Panic)
	}
	if lg == nil || len(lg.Delays) == 0 {
		return nil, "no delay was injected in this run"
	}
	g := c.Panicking()
	if g == nil {
		return nil, "the traceback has no panicking goroutine"
	}
	ix := newSiteIndex(tab)
	lg = beforePanic(lg, g, ix)
	if len(lg.Delays) == 0 {
		return nil, "no delay was injected in this run before the panic"
	}
	matchedSites := false
	for _, f := range g.Frames {
		if internalFrame(f) {
			continue
		}
		ids := ix.lookup(f)
		if len(ids) == 0 {
			continue
		}
		matchedSites = true
		if a := attributeAt(p, lg, c, g.ID, f, ids); a != nil {
			return a.how().withPartner(lg, g.ID), ""
		}
		if a := attributeCheckAct(p, tab, lg, c, g.ID, f, ids); a != nil {
			return a.withPartner(lg, g.ID), ""
		}
	}
	if a := attributeReorder(p, tab, lg, c, g, ix); a != nil {
		return a.how(), ""
	}
	if a := attributeLostCheck(p, lg, c, g, ix); a != nil { // checkact.go
		return a, ""
	}
	where := fmt.Sprintf("%s:%d", c.Failing.File, c.Failing.Line)
	if !matchedSites {
		return nil, fmt.Sprintf("the panic at %s (goroutine %d) is at no instrumented site", where, g.ID)
	}
	return nil, fmt.Sprintf("the panic at %s (goroutine %d) matches no candidate pair whose delay was injected in this run", where, g.ID)
}

// attributeReorder is the second chance for use-before-init: the log
// shows that, while a delay at an init location ℓ1 was in progress, a
// goroutine reached a watched site with the delay's object (it saw the
// slot before its init), and the panic is at an instrumented site later
// on. Two goroutines can fail that way:
//
//   - the one that reached the site: what it found missing sent it down a
//     wrong path (say, a nil check that led to a double close);
//   - the delayed one (Stale), after its delay ended: it had checked the
//     slot before the delay, the other goroutine acted on the same check
//     meanwhile, and both acted (a close both made, a value both freed).
//     Only the panics two acting goroutines make count (allowedCheckAct).
//     On a loaded machine this is how a delay that overslept its partner's
//     delay at the same location shows.
//
// The pair is (ℓ1 → the site reached) when that is a use-before-init pair
// of ℓ1, else ℓ1's first use-before-init pair. A reorder of the panicking
// goroutine wins over a stale one, and among either the most recent.
func attributeReorder(p *plans.Plan, tab *sites.Table, lg *Log, c *Crash, g *Goroutine, ix *siteIndex) *Attribution {
	f, ids := ix.firstSiteFrame(g)
	if len(ids) == 0 {
		return nil
	}
	gid := uint64(g.ID)
	var best *Attribution
	var bestT int64
	for _, r := range lg.Reorders {
		d := lg.Delay(r.Delay)
		if d == nil || d.G == r.G {
			continue
		}
		stale := false
		switch {
		case r.G == gid:
		case d.G == gid && d.Ended && allowedCheckAct(c.Kind):
			stale = true
		default:
			continue
		}
		if best != nil && (stale != best.Stale && stale || stale == best.Stale && r.T <= bestT) {
			continue // a stale reorder never beats the panicking goroutine's own
		}
		pair := reorderPair(p.Location(d.Site), r.Second)
		if pair == nil {
			continue
		}
		best = &Attribution{Kind: plans.UseBeforeInit, Delay: d, Pair: *pair, Failing: pickSite(tab, ids, c.Kind),
			Frame: f, InProgress: !d.Ended, Reordered: true, Stale: stale, PartnerG: int64(r.G)}
		bestT = r.T
	}
	return best
}

// reorderPair is the use-before-init pair of loc a reorder at site second
// names: (ℓ1 → second) if loc has it, else loc's first use-before-init
// pair; nil if loc is nil or has none.
func reorderPair(loc *plans.Location, second uint32) *plans.Pair {
	if loc == nil {
		return nil
	}
	var pair *plans.Pair
	for i := range loc.Pairs {
		pr := &loc.Pairs[i]
		if pr.Kind != plans.UseBeforeInit {
			continue
		}
		if pr.Second == second {
			return pr
		}
		if pair == nil {
			pair = pr
		}
	}
	return pair
}

// touchedDuring reports whether goroutine g touched the object of delay
// id while it was in progress (a reorder record).
func touchedDuring(lg *Log, id, g uint64) bool {
	for _, r := range lg.Reorders {
		if r.Delay == id && r.G == g {
			return true
		}
	}
	return false
}

// pickSite chooses among the sites of one line the one the panic kind
// points at: a close for close panics, a send for a send on a closed
// channel, else the first.
func pickSite(tab *sites.Table, ids []uint32, k abi.PanicKind) uint32 {
	want := ""
	switch k {
	case abi.PanicCloseClosed, abi.PanicCloseNil:
		want = "close"
	case abi.PanicSendClosed:
		want = "send"
	}
	if want != "" && tab != nil {
		for _, id := range ids {
			if s, ok := tab.Lookup(id); ok && strings.Contains(s.Kind, want) {
				return id
			}
		}
	}
	return ids[0]
}

func attributeAt(p *plans.Plan, lg *Log, c *Crash, gid int64, f Frame, ids []uint32) *Attribution {
	var best *Attribution
	better := func(a *Attribution) bool {
		if best == nil {
			return true
		}
		if a.InProgress != best.InProgress {
			return a.InProgress
		}
		return a.Delay.Start > best.Delay.Start
	}
	for _, d := range lg.Delays {
		loc := p.Location(d.Site)
		if loc == nil {
			continue
		}
		same := d.G == uint64(gid)
		for _, pr := range loc.Pairs {
			var a *Attribution
			switch pr.Kind {
			case plans.UseBeforeInit:
				// The failing read of the slot happened during the delay:
				// the delay is still in progress at the crash, or the log
				// shows this goroutine touching the object during it.
				if !same && contains(ids, pr.Second) && allowed(pr.Kind, c.Kind) &&
					(!d.Ended || touchedDuring(lg, d.ID, uint64(gid))) {
					a = &Attribution{Kind: pr.Kind, Delay: d, Pair: pr, Failing: pr.Second, Frame: f, InProgress: !d.Ended}
				}
			case plans.UseAfterDispose:
				if same && d.Ended && contains(ids, d.Site) && allowed(pr.Kind, c.Kind) {
					a = &Attribution{Kind: pr.Kind, Delay: d, Pair: pr, Failing: d.Site, Frame: f, SameGoroutine: true}
				}
			}
			if a != nil && better(a) {
				best = a
			}
		}
	}
	return best
}

// beforePanic returns lg without the delays that began after the
// panicking goroutine's operation was about to panic: its last panic
// record, when that record's site is on one of its frames (the crash, not
// an earlier panic the program recovered from). A goroutine runs its
// deferred calls while it panics, before the crash is printed, and a
// delay in one of them (a deferred Close passing a planned check) cannot
// have caused the panic; nor can a delay another goroutine began after
// it. The delay records are shared; the Log returned is a copy.
func beforePanic(lg *Log, g *Goroutine, ix *siteIndex) *Log {
	var pr *Panic
	for i := len(lg.Panics) - 1; i >= 0; i-- {
		if lg.Panics[i].G == uint64(g.ID) {
			pr = &lg.Panics[i]
			break
		}
	}
	if pr == nil {
		return lg
	}
	onFrame := false
	for _, f := range g.Frames {
		if !internalFrame(f) && contains(ix.lookup(f), pr.Site) {
			onFrame = true
			break
		}
	}
	if !onFrame {
		return lg
	}
	cut := false
	for _, d := range lg.Delays {
		cut = cut || d.Start > pr.T
	}
	if !cut {
		return lg
	}
	out := *lg
	out.Delays = nil
	out.byID = map[uint64]*Delay{}
	for _, d := range lg.Delays {
		if d.Start <= pr.T {
			out.Delays = append(out.Delays, d)
			out.byID[d.ID] = d
		}
	}
	return &out
}
