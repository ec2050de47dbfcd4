package report

import (
	"fmt"
	"strings"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/plans"
)

// How says how a reported crash came about (docs/report-format.md,
// "Crediting real crashes").
type How string

// The ways a MEMORDER panic at a planned site is credited.
const (
	// HowInProgress: the crash came while the delay at ℓ1 was in
	// progress (the classic exposure).
	HowInProgress How = "delay-in-progress"
	// HowAfterDelay: the delay had ended (a use-after-dispose in the
	// delayed goroutine, or a use-before-init reached during the delay
	// that failed after it).
	HowAfterDelay How = "after-delay"
	// HowDecision: another goroutine was inside the wafl runtime at ℓ1
	// deciding or starting its delay (before the run log counted it).
	HowDecision How = "delay-decision"
	// HowNatural: no delay explains the crash; the scheduler produced the
	// bad order on its own at a site the plan names.
	HowNatural How = "natural-schedule"
	// HowPreparation: the delay-free preparation run crashed.
	HowPreparation How = "preparation-run"
)

// Describe is the phrase reports use for h.
func (h How) Describe() string {
	switch h {
	case HowInProgress:
		return "during the injected delay"
	case HowAfterDelay:
		return "after the injected delay"
	case HowDecision:
		return "while wafl was deciding the delay at the delayed site (before it was counted)"
	case HowNatural:
		return "on the natural schedule (no injected delay explains it)"
	case HowPreparation:
		return "in the delay-free preparation run (exposed without delay)"
	}
	return string(h)
}

// creditPlanned is the last chance for a MEMORDER panic that Attribute
// could not tie to an injected delay: if the panicking goroutine is at a
// site the plan names — ℓ2 of a use-before-init pair or ℓ1 of a
// use-after-dispose location — with a panic that kind of bug produces, or
// it went through a check-then-act location in this run and then crashed
// acting (creditCheckAct),
// the crash is the bug, whether or not a delay had been counted. How is
// HowDecision when another goroutine's stack shows it inside the wafl
// runtime at that pair's ℓ1 with no delay of its own in progress in the
// log (the delay decision, caps or the log write had not finished), else
// HowNatural. Pruned pairs and dead locations count too: a real crash is
// never dropped because the plan gave up on the pair.
func creditPlanned(p *plans.Plan, tab *sites.Table, lg *Log, c *Crash) *Attribution {
	if p == nil || c == nil || !c.Kind.Memorder() {
		return nil
	}
	g := c.Panicking()
	if g == nil {
		return nil
	}
	ix := newSiteIndex(tab)
	deciding := decidingSites(c, ix, lg)
	for _, f := range g.Frames {
		if internalFrame(f) {
			continue
		}
		ids := ix.lookup(f)
		if len(ids) == 0 {
			continue
		}
		var best *Attribution
		for i := range p.Locations {
			l := &p.Locations[i]
			for _, pr := range l.Pairs {
				var failing uint32
				switch {
				case pr.Kind == plans.UseBeforeInit && contains(ids, pr.Second) && allowed(pr.Kind, c.Kind):
					failing = pr.Second
				case pr.Kind == plans.UseAfterDispose && contains(ids, l.Site) && allowed(pr.Kind, c.Kind):
					failing = l.Site
				default:
					continue
				}
				a := &Attribution{Kind: pr.Kind, Pair: pr, Failing: failing, Frame: f, How: HowNatural,
					Delay: &Delay{Site: l.Site, Ns: l.DelayNs}}
				if dg, ok := deciding[l.Site]; ok && dg != uint64(g.ID) {
					a.How = HowDecision
					a.Delay.G = dg
					a.InProgress = true
				}
				if best == nil || (a.How == HowDecision && best.How != HowDecision) {
					best = a
				}
			}
		}
		if best != nil {
			return best
		}
	}
	return creditCheckAct(p, tab, lg, c, g, ix)
}

// creditCheckAct credits a crash to a check-then-act location ℓ1 of the
// plan when the log shows the panicking goroutine went through ℓ1 in this
// run (its check: a delay that does not explain the crash, or a skip) and
// the panic is one two goroutines acting on one check make
// (allowedCheckAct), at an instrumented site — the first frame with sites
// is its act. The check usually sits in a helper (isClosed) that has
// returned by the time the act panics, so the stack cannot show it; the
// log can: goroutines skipped at the check by interference may close the
// same channel twice on the natural schedule. Skip records are capped
// per run (abi.MaxSkipRecords), so a goroutine past the cap is not
// credited.
func creditCheckAct(p *plans.Plan, tab *sites.Table, lg *Log, c *Crash, g *Goroutine, ix *siteIndex) *Attribution {
	if lg == nil || !allowedCheckAct(c.Kind) {
		return nil
	}
	f, ids := ix.firstSiteFrame(g)
	if len(ids) == 0 {
		return nil
	}
	gid := uint64(g.ID)
	passed := func(site uint32) bool {
		for _, sk := range lg.Skips {
			if sk.Site == site && sk.G == gid {
				return true
			}
		}
		for _, d := range lg.Delays {
			if d.Site == site && d.G == gid {
				return true
			}
		}
		return false
	}
	for i := range p.Locations {
		l := &p.Locations[i]
		for _, pr := range l.Pairs {
			if pr.Kind != plans.CheckThenAct || !passed(l.Site) {
				continue
			}
			return &Attribution{Kind: pr.Kind, Pair: pr, Failing: pickSite(tab, ids, c.Kind), Frame: f, How: HowNatural,
				Delay: &Delay{Site: l.Site, Ns: l.DelayNs}, SameGoroutine: true}
		}
	}
	return nil
}

// decidingSites maps each delay location some goroutine of the crash is
// at while inside the wafl detection runtime (package inject) to that
// goroutine, leaving out goroutines the log shows in a delay of their own
// (those are delays in progress, which Attribute handles).
func decidingSites(c *Crash, ix *siteIndex, lg *Log) map[uint32]uint64 {
	inDelay := map[uint64]bool{}
	if lg != nil {
		for _, d := range lg.Delays {
			if !d.Ended {
				inDelay[d.G] = true
			}
		}
	}
	out := map[uint32]uint64{}
	for _, g := range c.Goroutines {
		if g.ID == c.Goroutine || inDelay[uint64(g.ID)] {
			continue
		}
		inRuntime := false
		for _, f := range g.Frames {
			if strings.HasPrefix(f.Func, "github.com/memorder/wafl/inject.") {
				inRuntime = true
				continue
			}
			if !inRuntime || internalFrame(f) {
				continue
			}
			for _, id := range ix.lookup(f) {
				if _, ok := out[id]; !ok {
					out[id] = uint64(g.ID)
				}
			}
			break
		}
	}
	return out
}

// PrepCrash is a MEMORDER panic of a delay-free preparation run, judged
// against the package's site table.
type PrepCrash struct {
	Package, Test, Binary string
	Args, Env             []string
	Sites                 *sites.Table
	Output                []byte // the run's output (the panic is in it)
	// Disposed, when set, reports whether the recorded trace shows the
	// object goroutine g last accessed at site disposed of before that
	// access (and not initialized again): a nil value there was a use
	// after dispose, not before init.
	Disposed func(site uint32, g int64) bool
}

// PreparationBug returns the bug a crashed preparation run exposed without
// delay: a MEMORDER panic whose panicking goroutine is at a site the
// instrumenter placed (the run crashed, so there is no plan to name ℓ1;
// the kind follows the panic: a closed channel is a use after dispose, a
// nil value a use after dispose when the trace shows the object disposed
// before the access (PrepCrash.Disposed), else a use before init). It
// returns nil and why for any other failure.
func PreparationBug(in PrepCrash) (*Bug, string) {
	c := ParseCrash(in.Output)
	if c == nil {
		return nil, "no panic"
	}
	if !c.Kind.Memorder() {
		return nil, fmt.Sprintf("panic %q is not a MEMORDER panic", c.Panic)
	}
	g := c.Panicking()
	if g == nil {
		return nil, "the traceback has no panicking goroutine"
	}
	ix := newSiteIndex(in.Sites)
	for _, f := range g.Frames {
		if internalFrame(f) {
			continue
		}
		ids := ix.lookup(f)
		if len(ids) == 0 {
			continue
		}
		id := pickSite(in.Sites, ids, c.Kind)
		kind := plans.UseBeforeInit
		if c.Kind == abi.PanicSendClosed || c.Kind == abi.PanicCloseClosed ||
			in.Disposed != nil && in.Disposed(id, c.Goroutine) {
			kind = plans.UseAfterDispose
		}
		b := &Bug{
			Kind: kind, Panic: c.Panic, Package: in.Package, Test: in.Test,
			Failing:            siteLocation(in.Sites, id),
			PanickingGoroutine: c.Goroutine,
			How:                HowPreparation,
			Goroutines:         c.Goroutines,
			Stacks:             c.Text,
			Reproduce: Reproduce{
				Wafl:    fmt.Sprintf("wafl prepare --run %s %s", shellQuote("^"+in.Test+"$"), in.Package),
				Command: append([]string{in.Binary}, in.Args...), Env: in.Env,
			},
		}
		b.Failing.Frame = f.Func
		if b.Failing.File == "" {
			b.Failing.File, b.Failing.Line = f.File, f.Line
		}
		return b, ""
	}
	return nil, fmt.Sprintf("the panic at %s:%d is at no instrumented site", c.Failing.File, c.Failing.Line)
}

// creditDetail says, for a crash credited without a delay of its own,
// what the log shows of ℓ1's delays in this run: skipped (and why), or
// none decided.
func creditDetail(lg *Log, a *Attribution) string {
	l1 := a.Delay.Site
	if a.How == HowDecision {
		return fmt.Sprintf("goroutine %d was inside wafl's delay decision at the delayed site", a.Delay.G)
	}
	why := map[string]int{}
	var order []string
	delays := 0
	if lg != nil {
		for _, sk := range lg.Skips {
			if sk.Site == l1 {
				if why[sk.Why] == 0 {
					order = append(order, sk.Why)
				}
				why[sk.Why]++
			}
		}
		for _, d := range lg.Delays {
			if d.Site == l1 {
				delays++
			}
		}
	}
	var parts []string
	if delays > 0 {
		parts = append(parts, fmt.Sprintf("%d delay(s) at the delayed site that do not explain it", delays))
	}
	for _, w := range order {
		parts = append(parts, fmt.Sprintf("%d skipped (%s)", why[w], w))
	}
	if len(parts) == 0 {
		return "no delay was decided at the delayed site in this run"
	}
	return "the log shows " + strings.Join(parts, ", ")
}
