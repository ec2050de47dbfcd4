package plans

import "slices"

// The state detection runs change: probabilities, prunes, delay counts,
// runs and bugs. The wafl process folds each finished run in with
// ApplyRun; the inject runtime applies the same decay rule (Decayed) to
// its copy of the probabilities during a run.

// Pruning reasons recorded in Pair.Pruned.
const (
	PrunedHB = "hb-inference" // a delay at ℓ1 stalled ℓ2's goroutine (TSVD §3.4.4)
	// PrunedFollows: ℓ2 came right after a delay at ℓ1 ended, at two
	// lengths of the delay (ApplyRun): its goroutine waits for ℓ1's.
	PrunedFollows = "follows-delay"
	PrunedBug     = "bug-found" // the pair was exposed as a bug
)

// RunOutcome is what one finished detection run did, in the plan's terms:
// the input of ApplyRun. internal/report builds it from the run's log and
// crash output.
type RunOutcome struct {
	// Run is the record appended to Plan.Runs.
	Run Run
	// Delays are the delays the run injected.
	Delays []RunDelay
	// Pruned are the pairs happens-before inference pruned in the run.
	Pruned []PairID
	// NoDecay is set when the run switched decay off (ablation): no delay
	// lowers a probability.
	NoDecay bool
	// Late are the partner accesses that came right after a delay at
	// their ℓ1 ended (GrowDelay).
	Late []Late
	// Traps are the candidate pairs a basic-mode run found online
	// (AddTrap); ApplyRun adds them before anything else.
	Traps []Trap
	// Waits are the disposes that waited for a late partner (inject's
	// awaitLate) in the run, with the goroutine and when each ended, and
	// First the first instance the run logged of each location (a delay
	// or a skipped delay); Unreached are the locations the run never
	// reached. From them ApplyRun tells a wait that could not have helped
	// (noWait).
	Waits     []Wait
	First     map[uint32]Instance
	Unreached []uint32
	// Bug is the bug the run exposed, nil if none. Failing is the pair's
	// ℓ2 (for a reordered use-before-init, not the later site that
	// panicked): the plan keys a bug by its pair.
	Bug *Bug
}

// RunDelay is one delay a detection run injected.
type RunDelay struct {
	Site uint32
	// Ended is set when the delay returned; a delay the crash cut short
	// says nothing about its location.
	Ended bool
	// Exposed is set for the delay that exposed the run's bug.
	Exposed bool
}

// Wait is a dispose at Site that waited for a late partner in goroutine
// G until End (ns since the run's setup).
type Wait struct {
	Site uint32
	G    uint64
	End  int64
}

// Instance is a dynamic instance of a location: goroutine G at T.
type Instance struct {
	G uint64
	T int64
}

// Late is a partner access at Second that came right after a delay at
// First ended; NeedNs is how long after that delay's start it came, and
// DelayNs how long that delay lasted (0: not known).
type Late struct {
	First, Second uint32
	NeedNs        int64
	DelayNs       int64
}

// Follows reports whether the partner came so soon after the delay ended
// that its arrival followed the end rather than happened near it: within
// a tenth of the delay (1 ms at least) after a delay of at least
// MinFollowNs. A partner that follows the ends of delays of two lengths
// waits for the delayed goroutine (ApplyRun prunes the pair).
func (lt Late) Follows() bool {
	if lt.DelayNs < MinFollowNs {
		return false
	}
	return lt.NeedNs-lt.DelayNs <= max(int64(1e6), lt.DelayNs/10)
}

// MinFollowNs is the shortest delay whose end a partner's arrival can be
// said to follow (Late.Follows): after a shorter one, scheduler latency
// alone spreads arrivals over the window.
const MinFollowNs = 5e6

// GrowDelay lengthens the delay of location first after a partner arrived
// needNs after a delay there started, just after it ended: the new delay
// is the larger of 1.5 × the old one and α × needNs, at most MaxDelayNs
// (docs/algorithm.md, "Delays that learn"). It counts the growth in
// Location.Grown even when the delay is already at the bound, so the next
// right-after observation may prune by happens-before inference.
func (p *Plan) GrowDelay(first uint32, needNs int64) {
	l := p.Location(first)
	if l == nil {
		return
	}
	d := max(l.DelayNs*3/2, int64(p.Params.Alpha*float64(needNs)))
	if p.Params.MaxDelayNs > 0 {
		d = min(d, p.Params.MaxDelayNs)
	}
	if d > l.DelayNs {
		l.DelayNs = d
	}
	l.Grown++
}

// canGrow reports whether GrowDelay can lengthen l's delay: it is below
// MaxDelayNs, or there is no bound.
func (p *Plan) canGrow(l *Location) bool {
	return p.Params.MaxDelayNs <= 0 || l.DelayNs < p.Params.MaxDelayNs
}

// followed reports whether the partner of lt followed the end of a delay
// at lt.First in an earlier run too, and marks the pair (Pair.Follows)
// when it did not.
func (p *Plan) followed(lt Late) bool {
	l := p.Location(lt.First)
	if l == nil {
		return false
	}
	for i := range l.Pairs {
		if pr := &l.Pairs[i]; pr.Second == lt.Second && pr.Pruned == "" {
			if pr.Follows > 0 && l.Grown > 0 {
				return true
			}
			pr.Follows++
		}
	}
	return false
}

// PairID names the candidate pairs (First → Second), of either kind.
type PairID struct{ First, Second uint32 }

// ApplyRun folds a finished detection run into the plan: the pairs a
// basic-mode run found online join S (AddTrap); every delay
// counts at its location (Location.Delays); every delay that ended and did
// not expose the bug lowers its location's probability by Params.Decay
// (Decay), unless the run switched decay off or a late partner grows the
// location's delay instead (GrowDelay; a delay at MaxDelayNs decays); the
// pairs happens-before inference pruned are pruned (PrunedHB); a late
// partner grows its location's delay (GrowDelay), or prunes its pair when it followed the
// end of delays of two lengths (PrunedFollows); a pair a dispose waited
// for when no wait could help stops being waited for (noWait); the run
// is appended to Runs; the
// bug, if any, is recorded with AddBug, so its pair leaves S. Delays at
// sites the plan has no location for are ignored.
func (p *Plan) ApplyRun(o RunOutcome) {
	for _, t := range o.Traps {
		p.AddTrap(t)
	}
	late := map[uint32]int64{}
	for _, lt := range o.Late {
		if lt.Follows() && p.followed(lt) {
			// The partner followed the end of this delay and of one of
			// another length in an earlier run (the location grew in
			// between): it waits for ℓ1's goroutine, and a longer delay
			// only moves it later.
			p.PrunePair(lt.First, lt.Second, PrunedFollows)
			continue
		}
		late[lt.First] = max(late[lt.First], lt.NeedNs)
	}
	for _, d := range o.Delays {
		l := p.Location(d.Site)
		if l == nil {
			continue
		}
		l.Delays++
		// A delay that ended just before its partner came was too short,
		// not useless: it does not decay the location, which grows
		// instead — unless it is at the bound already, where the next
		// run could only repeat it.
		if _, late := late[d.Site]; d.Ended && !d.Exposed && !o.NoDecay && !(late && p.canGrow(l)) {
			p.Decay(d.Site, p.Params.Decay)
		}
	}
	p.decayAwaitedInVain(o)
	p.noWait(o)
	for _, pr := range o.Pruned {
		p.PrunePair(pr.First, pr.Second, PrunedHB)
	}
	for first, need := range late {
		p.GrowDelay(first, need)
	}
	p.Runs = append(p.Runs, o.Run)
	if o.Bug != nil {
		p.AddBug(*o.Bug)
	}
}

// noWait marks the use-after-dispose pairs whose dispose waited in the run
// for a location ℓ1 that no goroutine reached while it waited, and that
// either was not reached at all in the run, or first by the goroutine
// that waited: ℓ1 came after the dispose in that goroutine's own program
// order. No wait could have let a late partner in, and a dispose waits
// for such a pair no more (Pair.NoWait); its location stays in S.
func (p *Plan) noWait(o RunOutcome) {
	if len(o.Waits) == 0 {
		return
	}
	for i := range p.Locations {
		l := &p.Locations[i]
		for j := range l.Pairs {
			pr := &l.Pairs[j]
			if pr.Kind != UseAfterDispose || pr.Pruned != "" || pr.NoWait {
				continue
			}
			for _, w := range o.Waits {
				if w.Site != pr.Second {
					continue
				}
				first, reached := o.First[l.Site]
				if reached && first.T <= w.End {
					continue // ℓ1 came while it waited
				}
				if reached && first.G != w.G {
					continue // a late partner came after the wait
				}
				if !reached && !slices.Contains(o.Unreached, l.Site) {
					continue // reached, but its instances were not logged
				}
				pr.NoWait = true
				break
			}
		}
	}
}

// decayAwaitedInVain decays the locations of guessed pairs (predicted or
// static) whose partner's dispose waited for them in the run and that
// were not delayed: their goroutine never came. Such a location is never
// delayed, so no delay decays it; without this, its partner would wait in
// every run.
func (p *Plan) decayAwaitedInVain(o RunOutcome) {
	if len(o.Waits) == 0 || o.NoDecay {
		return
	}
	delayed := map[uint32]bool{}
	for _, d := range o.Delays {
		delayed[d.Site] = true
	}
	decayed := map[uint32]bool{}
	for _, w := range o.Waits {
		site := w.Site
		for i := range p.Locations {
			l := &p.Locations[i]
			if delayed[l.Site] || decayed[l.Site] {
				continue
			}
			for _, pr := range l.Pairs {
				if pr.Second == site && pr.Kind == UseAfterDispose && pr.Pruned == "" && Guessed(pr.From) {
					p.Decay(l.Site, p.Params.Decay)
					decayed[l.Site] = true
					break
				}
			}
		}
	}
}

// PrunePair marks every unpruned pair (first → second), of either kind, as
// pruned for reason and returns how many it marked.
func (p *Plan) PrunePair(first, second uint32, reason string) int {
	l := p.Location(first)
	if l == nil {
		return 0
	}
	n := 0
	for i := range l.Pairs {
		if pr := &l.Pairs[i]; pr.Second == second && pr.Pruned == "" {
			pr.Pruned = reason
			n++
		}
	}
	return n
}

// Decayed is wafl's one decay rule (TSVD §3.4.5): probability prob
// lowered by lambda, not below 0 and not above 1; a result within 1e-9 of
// 0 is 0, so that ten decays of 0.1 reach exactly 0. The inject runtime
// applies it to a location during a run, Plan.Decay to the plan.
func Decayed(prob, lambda float64) float64 {
	p := prob - lambda
	if p < 1e-9 {
		return 0
	}
	if p > 1 {
		return 1
	}
	return p
}

// Decay lowers the probability of site by lambda (Decayed) and returns
// the new probability (0 for an unknown site).
func (p *Plan) Decay(site uint32, lambda float64) float64 {
	l := p.Location(site)
	if l == nil {
		return 0
	}
	l.Prob = Decayed(l.Prob, lambda)
	return l.Prob
}

// AddBug records a bug a detection run exposed and removes its pairs from
// S: for a use-before-init bug, the pair (Delayed → Failing) when present,
// else every use-before-init pair of Delayed; for a use-after-dispose bug
// (the delayed use itself usually fails), the pair (Delayed → Failing)
// when present, else every use-after-dispose pair of Delayed. It returns
// false, recording nothing, when the same (kind, delayed, failing) bug is
// already recorded.
func (p *Plan) AddBug(b Bug) bool {
	for _, o := range p.Bugs {
		if o.Kind == b.Kind && o.Delayed == b.Delayed && o.Failing == b.Failing {
			return false
		}
	}
	p.Bugs = append(p.Bugs, b)
	l := p.Location(b.Delayed)
	if l == nil {
		return true
	}
	exact := false
	for i := range l.Pairs {
		if pr := &l.Pairs[i]; pr.Kind == b.Kind && pr.Second == b.Failing {
			exact = true
			if pr.Pruned == "" {
				pr.Pruned = PrunedBug
			}
		}
	}
	if !exact {
		for i := range l.Pairs {
			if pr := &l.Pairs[i]; pr.Kind == b.Kind && pr.Pruned == "" {
				pr.Pruned = PrunedBug
			}
		}
	}
	return true
}
