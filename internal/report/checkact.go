package report

import (
	"fmt"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

// attributeCheckAct attributes a panic at frame f (whose line holds the
// sites ids) of goroutine gid to a check-then-act pair (docs/algorithm.md):
// the goroutine itself was delayed at a check-then-act location ℓ1 — right
// after its check — and the delay had ended, so it acted on a stale check
// (closed the channel the other goroutine closed meanwhile, used what it
// disposed). The panic must be one a double dispose produces; the latest
// such delay wins.
func attributeCheckAct(p *plans.Plan, tab *sites.Table, lg *Log, c *Crash, gid int64, f Frame, ids []uint32) *Attribution {
	if !allowedCheckAct(c.Kind) {
		return nil
	}
	var best *Attribution
	for _, d := range lg.Delays {
		if d.G != uint64(gid) || !d.Ended || (best != nil && d.Start <= best.Delay.Start) {
			continue
		}
		loc := p.Location(d.Site)
		if loc == nil {
			continue
		}
		for _, pr := range loc.Pairs {
			if pr.Kind == plans.CheckThenAct {
				best = &Attribution{Kind: pr.Kind, Delay: d, Pair: pr, Failing: pickSite(tab, ids, c.Kind), Frame: f, SameGoroutine: true}
				break
			}
		}
	}
	if best != nil {
		return best
	}
	return attributeSpared(p, tab, lg, c, gid, f, ids)
}

// attributeSpared attributes the panic of the other side of a
// check-then-act pair: the log has a partner skip (abi.SkipPartner) of
// goroutine gid at a site ℓ2 naming a delay d at ℓ1 in another goroutine,
// where (ℓ1 → ℓ2) is a check-then-act pair. gid passed its check ℓ2 while d
// held the other goroutine after its own check, so both acted on a check
// that saw the object live; the delayed goroutine acted first and gid's act
// panicked (close of the channel it closed, a use of what it disposed).
func attributeSpared(p *plans.Plan, tab *sites.Table, lg *Log, c *Crash, gid int64, f Frame, ids []uint32) *Attribution {
	for i := len(lg.Skips) - 1; i >= 0; i-- {
		sk := lg.Skips[i]
		if sk.Why != abi.SkipPartner || sk.G != uint64(gid) || sk.Delay == 0 {
			continue
		}
		d := lg.Delay(sk.Delay)
		if d == nil || d.G == uint64(gid) {
			continue
		}
		if pr, ok := checkActPair(p, d.Site, sk.Site); ok {
			a := &Attribution{Kind: pr.Kind, Delay: d, Pair: pr, Failing: pickSite(tab, ids, c.Kind), Frame: f, PartnerG: gid}
			a.InProgress = !d.Ended
			return a.how()
		}
	}
	return nil
}

// checkActPair is the check-then-act pair of p's location at site whose
// second check is second.
func checkActPair(p *plans.Plan, site, second uint32) (plans.Pair, bool) {
	if loc := p.Location(site); loc != nil {
		for _, pr := range loc.Pairs {
			if pr.Kind == plans.CheckThenAct && pr.Second == second {
				return pr, true
			}
		}
	}
	return plans.Pair{}, false
}

// allowedCheckAct reports whether a panic of kind k can come from two
// goroutines both acting on a check.
func allowedCheckAct(k abi.PanicKind) bool {
	switch k {
	case abi.PanicCloseClosed, abi.PanicSendClosed, abi.PanicNilDeref, abi.PanicNilMap:
		return true
	}
	return false
}

// attributeRecovered looks at the MEMORDER panics the runtime logged
// before they happened (Log.Panics): in a run that failed without a crash,
// they were recovered by user code — a regression test's recover and
// t.Errorf, say. Each becomes the crash it would have been, a one-frame
// traceback at its site, and is attributed like any other; the first
// attributed one is returned with its crash.
func attributeRecovered(p *plans.Plan, tab *sites.Table, lg *Log) (*Attribution, *Crash, string) {
	why := ""
	for _, pn := range lg.Panics {
		c := recoveredCrash(tab, pn)
		a, w := Attribute(p, tab, lg, c)
		if a != nil {
			return a, c, ""
		}
		if why == "" {
			why = w
		}
	}
	return nil, nil, why
}

// recoveredCrash builds the crash a recovered panic would have been.
func recoveredCrash(tab *sites.Table, pn Panic) *Crash {
	msg := panicText(pn.Kind)
	if msg == "" {
		msg = string(pn.Kind)
	}
	c := &Crash{Panic: msg, Kind: classify(msg), Recovered: true, Goroutine: int64(pn.G)}
	var f Frame
	if tab != nil {
		if s, ok := tab.Lookup(pn.Site); ok {
			f = Frame{Func: s.Func, File: s.File, Line: s.Line}
		}
	}
	c.Failing = f
	c.Goroutines = []Goroutine{{ID: int64(pn.G), State: "running", Frames: []Frame{f}}}
	c.Text = fmt.Sprintf("panic: %s [recovered by user code]\n\ngoroutine %d [running]:\n%s\n\t%s:%d\n",
		msg, pn.G, f.Func, f.File, f.Line)
	return c
}

// attributeLostCheck attributes the panic of the delayed side of a
// check-then-act pair when its act is at no site: goroutine g was delayed
// at ℓ1, a check-then-act location; a reorder record shows another
// goroutine reached ℓ2 of one of ℓ1's check-then-act pairs, on the delay's
// object, while the delay held g — the other goroutine checked (or swapped)
// first, as the delay meant —; the delay ended, and g then panicked with a
// panic a lost check-then-act makes, in a frame of a file of the site
// table. The lost race sent g down a path that hands a nil value to code
// outside the site table: connect-go's Send loses its CompareAndSwap to
// CloseWrite, skips creating its request pipe, and writes to the nil
// *io.PipeWriter inside package io (connectrpc/connect-go #919). The
// failing location is that frame; the latest such delay wins.
func attributeLostCheck(p *plans.Plan, lg *Log, c *Crash, g *Goroutine, ix *siteIndex) *Attribution {
	if !allowedCheckAct(c.Kind) {
		return nil
	}
	var f Frame
	for _, fr := range g.Frames {
		if !internalFrame(fr) && ix.inSiteFile(fr) {
			f = fr
			break
		}
	}
	if f.File == "" {
		return nil
	}
	var best *Attribution
	for _, r := range lg.Reorders {
		d := lg.Delay(r.Delay)
		if d == nil || d.G != uint64(g.ID) || r.G == d.G || !d.Ended || (best != nil && d.Start <= best.Delay.Start) {
			continue
		}
		if pr, ok := checkActPair(p, d.Site, r.Second); ok {
			best = &Attribution{Kind: pr.Kind, Delay: d, Pair: pr, Frame: f, SameGoroutine: true,
				Reordered: true, PartnerG: int64(r.G)}
		}
	}
	return best
}
