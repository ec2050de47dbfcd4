package plans

import "github.com/memorder/wafl/abi"

// Version is the plan file format version. Bump it on any incompatible
// change and document the change in docs/plan-format.md.
const Version = 1

// Plan is the candidate set S of one test (WAFL thesis §4.1–4.4) together
// with the parameters and provenance that produced it and the state that
// detection runs update. It is stored as indented JSON.
type Plan struct {
	Version    int        `json:"version"`
	Params     Params     `json:"params"`
	Provenance Provenance `json:"provenance"`
	// Locations are the delay locations ℓ1 of S, sorted by site id.
	Locations []Location `json:"locations"`
	// Runs records every detection run that used this plan, in order.
	Runs []Run `json:"runs,omitempty"`
	// Bugs are the bugs detection runs exposed; their pairs leave S.
	Bugs []Bug `json:"bugs,omitempty"`
	// Subtests says which subtests of the test reached the plan's sites
	// in the preparation run; nil when it ran none (or wafl could not
	// tell which ran where).
	Subtests *Subtests `json:"subtests,omitempty"`
}

// Params are the knobs of the analysis and of detection runs.
type Params struct {
	// NearMissNs is δ, the near-miss window (default 100 ms).
	NearMissNs int64 `json:"near_miss_ns"`
	// Alpha scales the largest observed gap into the delay (default 1.25).
	Alpha float64 `json:"alpha"`
	// MinDelayNs and MaxDelayNs clamp every delay (defaults 1 ms, 100 ms).
	MinDelayNs int64 `json:"min_delay_ns"`
	MaxDelayNs int64 `json:"max_delay_ns"`
	// Decay is λ: a delay that exposes nothing lowers P by Decay (TSVD: 0.1).
	Decay float64 `json:"decay"`
	// HBFactor is δhb: a partner stalled for at least HBFactor × delay,
	// overlapping the delay, is taken as happens-before (TSVD §3.4.4).
	HBFactor float64 `json:"hb_factor"`
	// MaxDelayPerGoroutineNs and MaxDelayPerRunNs cap the total delay.
	MaxDelayPerGoroutineNs int64 `json:"max_delay_per_goroutine_ns"`
	MaxDelayPerRunNs       int64 `json:"max_delay_per_run_ns"`
	// GraceNs is how long the runtime waits after the test returned for
	// delayed goroutines to perform their delayed access.
	GraceNs int64 `json:"grace_ns"`
	// LoadFactor is the factor NearMissNs and MaxDelayNs were scaled by
	// for a loaded preparation run (Overrides.LoadFactor); absent: 1.
	LoadFactor float64 `json:"load_factor,omitempty"`
	// SlackNs is added to Alpha × gap in every delay (default 2 ms, scaled
	// by LoadFactor): a partner goroutine that loses the CPU for one
	// scheduler slice arrives that much later than in the preparation run,
	// whatever its gap. Absent (plans written before it existed): 0.
	SlackNs int64 `json:"slack_ns,omitempty"`
	// Stretch multiplies every learned delay in a detection run on a
	// loaded machine (RunStretch): a partner whose path to ℓ2 waits on
	// several timers or channel wake-ups arrives later by a share of its
	// gap, not by a constant. Absent or ≤ 1: no stretch.
	Stretch float64 `json:"stretch,omitempty"`
}

// Provenance says where a plan came from.
type Provenance struct {
	Package    string `json:"package"`
	Test       string `json:"test"`
	Trace      string `json:"trace"`
	Binary     string `json:"binary"`
	BinaryHash string `json:"binary_hash"` // "sha256:<hex>" of the test binary
	// BinaryStamp is the test binary's file stamp when wafl hashed it, in
	// a detection run's copy of the plan: a runtime whose executable has
	// that stamp knows it has BinaryHash without reading the binary.
	BinaryStamp *abi.Stamp `json:"binary_stamp,omitempty"`
	Sites       string     `json:"sites"`  // path of the site table
	Events      int64      `json:"events"` // events in the trace
	// Thinned counts the use events the recorder left out of the trace:
	// repeated uses of one slot at one site by one goroutine within
	// about a millisecond (docs/trace-format.md, thinned rows).
	Thinned int64  `json:"thinned,omitempty"`
	Created string `json:"created"` // RFC 3339
	Tool    string `json:"tool"`    // wafl version
	// Truncated is set when the trace ended early (the recorder crashed or
	// was killed) and only its readable prefix was analyzed.
	Truncated bool `json:"truncated,omitempty"`
	// Merged lists the traces of the other plans Merge folded into this one.
	Merged []string `json:"merged,omitempty"`
	// Learned counts the recording runs detect made because the plan had
	// no candidates at all (its preparation run was unlucky: the racing
	// goroutine ran late, after the test), at most MaxLearn;
	// LearnedCandidates is how many candidate pairs they added.
	Learned           int `json:"learned,omitempty"`
	LearnedCandidates int `json:"learned_candidates,omitempty"`
	// DetectRecorded counts the detection runs that also recorded their
	// events (at most MaxDetectRecord, the first run of a detect call
	// each), and DetectCandidates how many candidate pairs their traces
	// added to the plan (AddNew; Pair.From "detect").
	DetectRecorded   int `json:"detect_recorded,omitempty"`
	DetectCandidates int `json:"detect_candidates,omitempty"`
	// Forks counts the goroutines the test's instrumented code started:
	// the fork rows of the trace (the test goroutine's own adoption of
	// TestMain's fork token is not counted) and the go rows of goroutines
	// that never ran; nil in plans written before it existed.
	// A plan without candidates whose trace has no fork cannot have lost
	// a pair to a late goroutine, so detect does not re-learn it.
	Forks *int64 `json:"forks,omitempty"`
	// Late counts the goroutines of the run the plan was last learned
	// from that were late: never ran, reached no access of their own
	// before the test ended, or (one more) left accesses after its end
	// that its package run dropped. A plan without candidates keeps
	// learning when it has some (or no Late: a plan written before it
	// existed), since a recording run finds new pairs where a goroutine
	// was late; without, it learns once, and only when its test is short
	// (DurationNs).
	Late *int64 `json:"late,omitempty"`
	// DurationNs is how long the test ran in the preparation run the
	// plan was made from (0: not known).
	DurationNs int64 `json:"duration_ns,omitempty"`
	// StaticLeft counts the static candidate pairs the analysis ranked
	// below its cap per test and left out of the plan
	// (analyze/static.go).
	StaticLeft int `json:"static_left,omitempty"`
	// Basic is set for a plan of basic mode (--ablate basic, the thesis's
	// WAFLBASIC): no preparation run made it; detection runs add the
	// candidate pairs they find online (Plan.AddTrap).
	Basic bool `json:"basic,omitempty"`
}

// MaxLearn bounds the recording runs detect makes for a plan without
// candidates (Provenance.Learned).
const MaxLearn = 3

// MaxDetectRecord bounds the detection runs of a plan that also record
// (Provenance.DetectRecorded), and MaxDetectCandidates the pairs one such
// run may add.
const (
	MaxDetectRecord     = 3
	MaxDetectCandidates = 64
)

// Origins of a pair (Pair.From): the preparation run (empty), a
// recording run of detect for a plan without candidates, a detection run
// that also recorded, a prediction for a goroutine that was late in the
// run that was analyzed (analyze/predict.go), or a static candidate: a
// site the goroutine of a go statement may reach, paired with an access
// the trace shows in another goroutine (analyze/static.go). Predicted and
// static pairs keep their mark whichever run's trace they came from.
const (
	FromLearn     = "learn"
	FromDetect    = "detect"
	FromPredicted = "predicted"
	FromStatic    = "static"
	// FromMirror marks a check-then-act pair (ℓ2 → ℓ1) the analysis made
	// from an observed pair (ℓ1 → ℓ2) of two different check sites: the
	// other goroutine may check first in a later run, and then it is the
	// side to delay (docs/algorithm.md, "Which side is delayed").
	FromMirror = "mirror"
)

// Guessed reports whether a pair of origin from was not seen in a trace
// but guessed: predicted, static or mirrored.
func Guessed(from string) bool {
	return from == FromPredicted || from == FromStatic || from == FromMirror
}

// Kind names the two MEMORDER bug kinds.
type Kind string

const (
	UseBeforeInit   Kind = "use-before-init"   // pair (init ℓ1 → use ℓ2)
	UseAfterDispose Kind = "use-after-dispose" // pair (use ℓ1 → dispose ℓ2)
	// CheckThenAct is wafl's extension of the thesis (docs/algorithm.md):
	// pair (check ℓ1 → check ℓ2) of two goroutines that check whether an
	// object was disposed and dispose it when not; the delay after ℓ1 lets
	// both checks pass, and both dispose.
	CheckThenAct Kind = "check-then-act"
)

// Known reports whether k is one of the pair kinds above.
func (k Kind) Known() bool {
	return k == UseBeforeInit || k == UseAfterDispose || k == CheckThenAct
}

// Location is one delay location ℓ1 of S with its per-location state.
type Location struct {
	Site uint32 `json:"site"`
	// DelayNs is the learned delay: α × the largest gap seen, clamped.
	DelayNs int64 `json:"delay_ns"`
	// MaxGapNs is the largest gap τ2 − τ1 seen for this location.
	MaxGapNs int64 `json:"max_gap_ns"`
	// Prob is the probability of delaying at the next dynamic instance;
	// it starts at 1 and decays by Params.Decay per delay that exposed
	// nothing. A location at 0 has left S.
	Prob float64 `json:"prob"`
	// Pairs are the candidate pairs this location is ℓ1 of.
	Pairs []Pair `json:"pairs"`
	// Interference is the interference set of ℓ1 (thesis §4.4): candidate
	// locations ℓ* seen in ℓ2's goroutine after τ1 − δ and before ℓ2. A
	// delay at ℓ1 is skipped while one of them has a delay in progress.
	Interference []uint32 `json:"interference,omitempty"`
	// Delays counts the delays injected here over all detection runs.
	Delays int `json:"delays,omitempty"`
	// Grown counts the times a detection run saw a partner arrive right
	// after a delay here ended and ApplyRun lengthened DelayNs (GrowDelay).
	// Happens-before inference prunes a pair of a location only once it
	// has grown (or its delay is at MaxDelayNs).
	Grown int `json:"grown,omitempty"`
}

// Pair is one candidate {ℓ1, ℓ2}.
type Pair struct {
	Kind   Kind   `json:"kind"`
	First  uint32 `json:"first"`  // ℓ1, the delay location
	Second uint32 `json:"second"` // ℓ2, the partner location
	// Object is one object (slot or channel address in the preparation
	// run) on which the pair was seen — the analyzer picks the one with
	// the largest gap; for reading, not for matching.
	Object uint64 `json:"object"`
	// Count is how many dynamic instances of the pair were seen.
	Count int `json:"count"`
	// MinGapNs and MaxGapNs are the smallest and largest τ2 − τ1 seen.
	MinGapNs int64 `json:"min_gap_ns"`
	MaxGapNs int64 `json:"max_gap_ns"`
	// Pruned is set when a detection run removed the pair from S, with
	// the reason ("hb-inference", "bug-found").
	Pruned string `json:"pruned,omitempty"`
	// Follows counts the detection runs in which ℓ2 came right after a
	// delay at ℓ1 ended (Late.Follows); at the second, after the delay
	// grew, ApplyRun prunes the pair (PrunedFollows).
	Follows int `json:"follows,omitempty"`
	// NoWait is set for a use-after-dispose pair when a dispose at ℓ2
	// waited for ℓ1 in a detection run and no wait could have helped: ℓ1
	// was not reached at all, or first by the goroutine that waited, after
	// its wait (Plan.ApplyRun). A dispose no longer waits for this pair.
	NoWait bool `json:"no_wait,omitempty"`
	// From says which run's trace the pair came from when it was not the
	// preparation run's: FromLearn or FromDetect, or FromPredicted or
	// FromStatic for a pair the analysis guessed instead of seeing it.
	From string `json:"from,omitempty"`
}

// Run is what one detection run did.
type Run struct {
	N       int    `json:"n"`
	Seed    uint64 `json:"seed"`
	Delays  int    `json:"delays"`
	DelayNs int64  `json:"delay_ns"`
	Skipped int    `json:"skipped"` // delays skipped for interference, the partner's side or caps
	// SkippedPartner counts the delays of Skipped that were on the
	// partner's side of a delay in progress (abi.SkipPartner).
	SkippedPartner int    `json:"skipped_partner,omitempty"`
	Pruned         int    `json:"pruned"`  // pairs pruned by HB inference
	Outcome        string `json:"outcome"` // "pass", "bug", "fail", "timeout"
	DurationNs     int64  `json:"duration_ns"`
	// CPUNs is the user and system time of the run's test process.
	CPUNs int64 `json:"cpu_ns,omitempty"`
	// Beside is how many of the test's runs started side by side with
	// this one, itself included, all reading the plan as it was then
	// (a long test's runs after its first); 0 for a run alone. Runs side
	// by side are consecutive in Runs.
	Beside int `json:"beside,omitempty"`
	// Sub is the -test.run pattern below the test's own name when the
	// run took only some of its subtests (Plan.SubtestPattern).
	Sub string `json:"sub,omitempty"`
}

// Bug is a bug a detection run exposed.
type Bug struct {
	Kind    Kind   `json:"kind"`
	Delayed uint32 `json:"delayed"` // ℓ1
	Failing uint32 `json:"failing"` // the site that panicked
	Run     int    `json:"run"`
	Seed    uint64 `json:"seed"`
	Panic   string `json:"panic"`
}

// Subtests says which subtests of the first level (t.Run called by the
// test's own function) reached which sites of the plan in the preparation
// run, so that a detection run can take only the subtests its pairs need
// (docs/algorithm.md, "Runs of some subtests").
type Subtests struct {
	// Count is how many first-level subtests the preparation run ran.
	Count int `json:"count"`
	// List holds those that reached a site of the plan (a delay
	// location or a partner), in the order they started.
	List []Subtest `json:"list,omitempty"`
	// Outside holds the sites of the plan that goroutines of no subtest
	// reached (the test's own function before, between and after its
	// subtests): every run reaches them.
	Outside []uint32 `json:"outside,omitempty"`
	// Whole: a run of only some subtests reached no delay location of the
	// plan, or failed, so runs take the whole test.
	Whole bool `json:"whole,omitempty"`
}

// Subtest is one first-level subtest and the plan's sites it reached.
type Subtest struct {
	Name  string   `json:"name"` // as t.Name() returns it: "TestX/case_1"
	Sites []uint32 `json:"sites"`
}
