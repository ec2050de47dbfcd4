package plans

import (
	"fmt"
	"math"
	"time"
)

// Defaults of Params (WAFL thesis §4.3, TSVD §3.4.4–3.4.5).
const (
	DefaultNearMissNs             = int64(100e6) // δ = 100 ms
	DefaultAlpha                  = 1.25         // α
	DefaultMinDelayNs             = int64(1e6)   // 1 ms
	DefaultMaxDelayNs             = int64(100e6) // 100 ms
	DefaultDecay                  = 0.1          // λ
	DefaultHBFactor               = 0.5          // δhb
	DefaultMaxDelayPerGoroutineNs = int64(1e9)   // 1 s
	DefaultMaxDelayPerRunNs       = int64(5e9)   // 5 s
	DefaultGraceNs                = int64(250e6) // 250 ms
	DefaultSlackNs                = int64(2e6)   // 2 ms per unit of load factor
)

// DefaultParams returns the default parameters.
func DefaultParams() Params {
	return Params{
		NearMissNs:             DefaultNearMissNs,
		Alpha:                  DefaultAlpha,
		MinDelayNs:             DefaultMinDelayNs,
		MaxDelayNs:             DefaultMaxDelayNs,
		Decay:                  DefaultDecay,
		HBFactor:               DefaultHBFactor,
		MaxDelayPerGoroutineNs: DefaultMaxDelayPerGoroutineNs,
		MaxDelayPerRunNs:       DefaultMaxDelayPerRunNs,
		GraceNs:                DefaultGraceNs,
	}
}

// Delay returns the delay for a location whose largest observed gap is
// gapNs: Alpha × gapNs clamped to [MinDelayNs, MaxDelayNs] (thesis §4.3).
func (p Params) Delay(gapNs int64) int64 {
	d := float64(gapNs) * p.Alpha
	if d >= float64(p.MaxDelayNs) || math.IsNaN(d) {
		return p.MaxDelayNs
	}
	n := int64(math.Ceil(d))
	if n < p.MinDelayNs {
		return p.MinDelayNs
	}
	if n > p.MaxDelayNs {
		return p.MaxDelayNs
	}
	return n
}

// Validate reports the first parameter that is out of range.
func (p Params) Validate() error {
	switch {
	case p.NearMissNs <= 0:
		return fmt.Errorf("near_miss_ns must be > 0, got %d", p.NearMissNs)
	case !(p.Alpha >= 1) || math.IsInf(p.Alpha, 0):
		return fmt.Errorf("alpha must be a finite number ≥ 1, got %v", p.Alpha)
	case p.MinDelayNs <= 0:
		return fmt.Errorf("min_delay_ns must be > 0, got %d", p.MinDelayNs)
	case p.MaxDelayNs < p.MinDelayNs:
		return fmt.Errorf("max_delay_ns (%d) must be ≥ min_delay_ns (%d)", p.MaxDelayNs, p.MinDelayNs)
	case !(p.Decay >= 0 && p.Decay <= 1):
		return fmt.Errorf("decay must be in [0,1], got %v", p.Decay)
	case !(p.HBFactor >= 0) || math.IsInf(p.HBFactor, 0):
		return fmt.Errorf("hb_factor must be a finite number ≥ 0, got %v", p.HBFactor)
	case p.MaxDelayPerGoroutineNs < 0:
		return fmt.Errorf("max_delay_per_goroutine_ns must be ≥ 0, got %d", p.MaxDelayPerGoroutineNs)
	case p.MaxDelayPerRunNs < 0:
		return fmt.Errorf("max_delay_per_run_ns must be ≥ 0, got %d", p.MaxDelayPerRunNs)
	case p.GraceNs < 0:
		return fmt.Errorf("grace_ns must be ≥ 0, got %d", p.GraceNs)
	case p.SlackNs < 0:
		return fmt.Errorf("slack_ns must be ≥ 0, got %d", p.SlackNs)
	case !(p.Stretch >= 0 && p.Stretch <= MaxStretch):
		return fmt.Errorf("stretch must be in [0,%g], got %v", MaxStretch, p.Stretch)
	}
	return nil
}

// Overrides are parameter values chosen for one invocation, such as wafl's
// command-line flags. A zero field keeps the value it would replace.
type Overrides struct {
	// Analysis parameters: they shape the candidate set and the delays,
	// so they only go into a new plan.
	NearMiss, MinDelay, MaxDelay time.Duration
	Alpha                        float64
	// LoadFactor, when above 1, says how much slower than on an idle
	// machine the preparation run ran (the pipeline measures the run queue
	// per core around it): δ and the maximum delay are scaled by it, at
	// most MaxLoadFactor, so that a gap a loaded run stretched still falls
	// in the window and its delay can still cover it (docs/algorithm.md,
	// "Load"). NoLoadScale turns the scaling off.
	LoadFactor  float64
	NoLoadScale bool
	// NoForkOrder keeps candidate pairs that fork edges order (the
	// parent-child ablation; analyze.Options.NoForkOrder).
	NoForkOrder bool
	// Detection-run parameters: they go into a new plan and are applied
	// to an existing plan before its runs.
	Decay                                float64
	MaxDelayPerGoroutine, MaxDelayPerRun time.Duration
}

// NewParams returns the parameters of a new plan: DefaultParams with
// every field o sets.
func (o Overrides) NewParams() Params {
	p := DefaultParams()
	if o.NearMiss > 0 {
		p.NearMissNs = int64(o.NearMiss)
	}
	if o.Alpha > 0 {
		p.Alpha = o.Alpha
	}
	if o.MinDelay > 0 {
		p.MinDelayNs = int64(o.MinDelay)
	}
	if o.MaxDelay > 0 {
		p.MaxDelayNs = int64(o.MaxDelay)
	}
	if f := min(o.LoadFactor, MaxLoadFactor); f > 1 && !o.NoLoadScale {
		p.NearMissNs = int64(float64(p.NearMissNs) * f)
		p.MaxDelayNs = int64(float64(p.MaxDelayNs) * f)
		p.LoadFactor = f
	}
	o.ApplyDetection(&p)
	return p
}

// MaxLoadFactor bounds the load scaling of δ and the maximum delay.
const MaxLoadFactor = 4.0

// MaxSlackFactor bounds the load scaling of the run slack. It is larger
// than MaxLoadFactor: the slack is a few milliseconds per run, and with a
// run queue of several tasks per core a partner can arrive milliseconds
// after a delay that carried the slack of factor 4 (docs/algorithm.md,
// "Delay length").
const MaxSlackFactor = 8.0

// RunSlack is the slack a detection run adds to every learned delay
// (Params.SlackNs) when the machine's load factor is load at the start of
// the run: DefaultSlackNs per unit of load factor (at least 1, at most
// MaxSlackFactor), or DefaultSlackNs when noScale is set.
func RunSlack(load float64, noScale bool) int64 {
	f := min(max(load, 1), MaxSlackFactor)
	if noScale || math.IsNaN(f) {
		f = 1
	}
	return int64(float64(DefaultSlackNs) * f)
}

// MaxStretch bounds RunStretch.
const MaxStretch = 2.5

// RunStretch is the factor a detection run stretches every learned delay by
// (Params.Stretch) when the machine's load factor is load at the start of
// the run: 1 + (load − 1)/2, at least 1, at most MaxStretch (reached at
// load factor 4), or 1 when noScale is set. On a quiet machine delays are
// α × gap as in the thesis; with other jobs running, a gap made of timer
// waits grows to a multiple of its preparation-run length
// (docs/algorithm.md, "Delay length").
func RunStretch(load float64, noScale bool) float64 {
	if noScale || math.IsNaN(load) {
		return 1
	}
	return min(max(1+(load-1)/2, 1), MaxStretch)
}

// RunDelay is the length a detection run gives a delay whose learned
// length is learned: learned × Stretch + SlackNs, never past MaxDelayNs
// unless learned already is, never shorter than learned.
func (p Params) RunDelay(learned int64) int64 {
	if learned <= 0 {
		return learned
	}
	d := float64(learned)
	if p.Stretch > 1 {
		d *= p.Stretch
	}
	d += float64(p.SlackNs)
	if d >= float64(p.MaxDelayNs) || math.IsNaN(d) {
		return max(learned, p.MaxDelayNs)
	}
	return max(learned, int64(d))
}

// ApplyDetection sets the detection-run parameters o sets (decay and the
// caps) in p, the parameters of an existing plan. The analysis
// parameters stay: the plan's candidates and delays were made with them.
func (o Overrides) ApplyDetection(p *Params) {
	if o.Decay > 0 {
		p.Decay = o.Decay
	}
	if o.MaxDelayPerGoroutine > 0 {
		p.MaxDelayPerGoroutineNs = int64(o.MaxDelayPerGoroutine)
	}
	if o.MaxDelayPerRun > 0 {
		p.MaxDelayPerRunNs = int64(o.MaxDelayPerRun)
	}
}

// ForRun returns the plan one detection run reads: a copy of p whose
// parameters carry the run's stretch and scheduling slack for the load
// factor load at its start (RunStretch, RunSlack; noScale: not scaled by
// load), and whose caps on the delay per goroutine and per run are
// stretched as its delays are, so that a run under load can inject as
// many delays as one at rest. p keeps the learned lengths and its caps.
// The copy leaves out the record of the test's subtests (wafl chooses
// which to run from it; the runtime does not read it). It shares p's
// locations, runs and bugs: it is for saving, not for changing.
func (p *Plan) ForRun(load float64, noScale bool) *Plan {
	c := *p
	c.Subtests = nil // wafl's choice of subtests, not the runtime's
	c.Params.SlackNs = RunSlack(load, noScale)
	c.Params.Stretch = RunStretch(load, noScale)
	if f := c.Params.Stretch; f > 1 {
		c.Params.MaxDelayPerGoroutineNs = int64(float64(p.Params.MaxDelayPerGoroutineNs) * f)
		c.Params.MaxDelayPerRunNs = int64(float64(p.Params.MaxDelayPerRunNs) * f)
	}
	return &c
}
