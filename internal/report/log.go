package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

// Log is a detection run's log (WAFL_LOG) as written by package inject; its
// record kinds and keys are abi.RunLog's.
type Log struct {
	Setup  *Setup   // nil when the log is empty or missing
	Delays []*Delay // in start order
	// Skips are skipped delays: interference and caps (at most
	// abi.MaxSkipRecords per run), probability (at most
	// abi.MaxProbSkipRecords); the loc and finish records have exact totals.
	Skips  []Skip
	Prunes []Prune // pairs pruned by happens-before inference
	// Late are partner accesses that came right after a delay ended
	// (the delay grows in the plan).
	Late []Late
	// Reorders are accesses at watched sites to the object of a delay in
	// progress in another goroutine (at most abi.MaxReorderRecords per run).
	Reorders []Reorder
	Locs     []LocEnd // per-location state at Finish
	// Panics are instrumented operations that were about to panic with a
	// MEMORDER panic (at most abi.MaxPanicRecords per run): seen even when
	// user code recovered the panic.
	Panics []Panic
	// Traps are the candidate pairs a basic-mode run found online and
	// added to its trap set (the plan gets them, plans.Plan.AddTrap).
	Traps []Trap
	// Awaits are disposes that waited for a late partner.
	Awaits []Await
	Finish *Finish // nil when the process died before Finish
	// Missing is set when the log file did not exist (the binary failed
	// before setting up the run). Truncated is set when the last line was
	// cut short (the process died while writing it); BadLines counts
	// lines that were not records.
	Missing   bool
	Truncated bool
	BadLines  int
	byID      map[uint64]*Delay
}

// Setup is the log's first record.
type Setup struct {
	UnixNs        int64  `json:"unix_ns"` // wall-clock start; every "t" is relative to it
	MonoNs        int64  `json:"mono_ns"` // the same start on the runtime's monotonic clock, a trace's time base
	Pid           int    `json:"pid"`
	Run           int    `json:"run"`
	Seed          uint64 `json:"seed"`
	SeedSet       bool   `json:"seed_set"`
	Plan          string `json:"plan"`
	Locations     int    `json:"locations"`
	LiveLocations int    `json:"live_locations"`
	Ablate        string `json:"ablate"`
}

// Delay is one injected delay: its start record and, once it ended, its
// end record.
type Delay struct {
	ID     uint64 `json:"id"`
	Site   uint32 `json:"site"`
	G      uint64 `json:"g"`   // delayed goroutine
	Obj    uint64 `json:"obj"` // object of the delayed access
	Ns     int64  `json:"ns"`  // planned length
	N      uint64 `json:"n"`   // dynamic instance of the site
	Start  int64  `json:"t"`   // ns since setup
	Ended  bool   `json:"ended"`
	End    int64  `json:"end,omitempty"`
	Actual int64  `json:"actual_ns,omitempty"`
	// Prob is the location's probability after this delay decayed it.
	Prob float64 `json:"prob,omitempty"`
}

// Skip is a delay skipped for interference, a cap or by probability.
type Skip struct {
	T    int64  `json:"t"`
	Site uint32 `json:"site"`
	G    uint64 `json:"g"`
	N    uint64 `json:"n"`
	Why  string `json:"why"`
	By   uint32 `json:"by,omitempty"` // the interfering or holding location
	// Delay and DelayG are, for abi.SkipPartner, the delay in progress at
	// By and the goroutine it held: the side delayed instead of G.
	Delay  uint64 `json:"id,omitempty"`
	DelayG uint64 `json:"delay_g,omitempty"`
}

// Prune is a pair pruned by happens-before inference.
type Prune struct {
	T       int64  `json:"t"`
	First   uint32 `json:"first"`
	Second  uint32 `json:"second"`
	Delay   uint64 `json:"id"`      // the delay that stalled the partner
	G       uint64 `json:"g"`       // the stalled goroutine
	DelayG  uint64 `json:"delay_g"` // the delayed goroutine
	Gap     int64  `json:"gap"`
	DelayNs int64  `json:"delay_ns"`
}

// Late is partner site Second reached by goroutine G right after delay
// Delay at First ended, NeedNs after it started.
type Late struct {
	T       int64  `json:"t"`
	First   uint32 `json:"first"`
	Second  uint32 `json:"second"`
	Delay   uint64 `json:"id"`
	G       uint64 `json:"g"`
	NeedNs  int64  `json:"need_ns"`
	DelayNs int64  `json:"delay_ns"`
}

// Reorder is watched site Second reached by goroutine G, with object Obj,
// while delay Delay at ℓ1 = First on the same object was in progress in
// goroutine DelayG.
type Reorder struct {
	T      int64  `json:"t"`
	First  uint32 `json:"first"`
	Second uint32 `json:"second"`
	Delay  uint64 `json:"id"`
	G      uint64 `json:"g"`
	DelayG uint64 `json:"delay_g"`
	Obj    uint64 `json:"obj"`
}

// Panic is an instrumented operation at Site in goroutine G that was
// about to panic (Kind: abi.Panic*) on object Obj.
type Panic struct {
	T    int64         `json:"t"`
	Site uint32        `json:"site"`
	G    uint64        `json:"g"`
	Obj  uint64        `json:"obj"`
	Kind abi.PanicKind `json:"kind"`
}

// Trap is a candidate pair (First → Second) of Kind that a basic-mode
// run found online: goroutine G reached Second on Obj Gap ns after
// another goroutine reached First; DelayNs is the delay First got.
type Trap struct {
	T       int64  `json:"t"`
	First   uint32 `json:"first"`
	Second  uint32 `json:"second"`
	Kind    string `json:"kind"`
	Obj     uint64 `json:"obj"`
	Gap     int64  `json:"gap"`
	G       uint64 `json:"g"`
	DelayNs int64  `json:"delay_ns"`
}

// PlanTraps returns the log's traps as plans.Trap.
func (lg *Log) PlanTraps() []plans.Trap {
	var out []plans.Trap
	for _, t := range lg.Traps {
		if k := plans.Kind(t.Kind); k.Known() && t.First != 0 && t.Second != 0 {
			out = append(out, plans.Trap{Kind: k, First: t.First, Second: t.Second, Object: t.Obj, GapNs: t.Gap})
		}
	}
	return out
}

// LocEnd is a location's state at Finish.
type LocEnd struct {
	Site      uint32  `json:"site"`
	Prob      float64 `json:"p"`
	Live      bool    `json:"live"`
	Delays    int64   `json:"delays"`
	Instances uint64  `json:"instances"`
	SkipProb  int64   `json:"skip_prob"`
}

// Finish is the log's last record.
type Finish struct {
	T                int64 `json:"t"`
	Delays           int64 `json:"delays"`
	DelayNs          int64 `json:"delay_ns"`
	SkipInterference int64 `json:"skip_interference"`
	SkipCapGoroutine int64 `json:"skip_cap_goroutine"`
	SkipCapRun       int64 `json:"skip_cap_run"`
	HB               int64 `json:"hb"`
	Reorders         int64 `json:"reorders"`
	DrainNs          int64 `json:"drain_ns"`
	Awaits           int64 `json:"awaits"`
	SkipPartner      int64 `json:"skip_partner"`
}

// Await is a dispose that waited Ns for a late partner (abi.EvAwait).
type Await struct {
	T    int64  `json:"t"`
	Site uint32 `json:"site"`
	G    uint64 `json:"g"`
	Ns   int64  `json:"ns"`
}

// logRecord is the union of all record fields.
type logRecord struct {
	Ev   string  `json:"ev"`
	T    int64   `json:"t"`
	ID   uint64  `json:"id"`
	Ns   int64   `json:"ns"`
	P    float64 `json:"p"`
	G    uint64  `json:"g"`
	Site uint32  `json:"site"`
}

// ReadLog reads the run log at path. A missing file gives an empty log
// with Missing set; a truncated last line is dropped and flagged.
func ReadLog(path string) (*Log, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Log{Missing: true, byID: map[uint64]*Delay{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	lg, err := ParseLog(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("run log %s: %w", path, err)
	}
	return lg, nil
}

// ParseLog reads a run log from r.
func ParseLog(r io.Reader) (*Log, error) {
	lg := &Log{byID: map[uint64]*Delay{}}
	br := bufio.NewReader(r)
	lineNo := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			complete := line[len(line)-1] == '\n'
			if perr := lg.add(bytes.TrimSpace(line)); perr != nil {
				if !complete {
					lg.Truncated = true
				} else {
					lg.BadLines++
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
		}
	}
	return lg, nil
}

func (lg *Log) add(line []byte) error {
	if len(line) == 0 {
		return nil
	}
	var rec logRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return err
	}
	switch rec.Ev {
	case abi.EvSetup:
		var s Setup
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		lg.Setup = &s
	case abi.EvDelay:
		var d Delay
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		lg.Delays = append(lg.Delays, &d)
		lg.byID[d.ID] = lg.Delays[len(lg.Delays)-1]
	case abi.EvEnd:
		d := lg.byID[rec.ID]
		if d == nil {
			return fmt.Errorf("end of unknown delay %d", rec.ID)
		}
		d.Ended, d.End, d.Actual, d.Prob = true, rec.T, rec.Ns, rec.P
	case abi.EvSkip:
		var s Skip
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		lg.Skips = append(lg.Skips, s)
	case abi.EvHB:
		var p Prune
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		lg.Prunes = append(lg.Prunes, p)
	case abi.EvLate:
		var l Late
		if err := json.Unmarshal(line, &l); err != nil {
			return err
		}
		lg.Late = append(lg.Late, l)
	case abi.EvReorder:
		var r Reorder
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		lg.Reorders = append(lg.Reorders, r)
	case abi.EvPanic:
		var p Panic
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		lg.Panics = append(lg.Panics, p)
	case abi.EvTrap:
		var t Trap
		if err := json.Unmarshal(line, &t); err != nil {
			return err
		}
		lg.Traps = append(lg.Traps, t)
	case abi.EvAwait:
		var a Await
		if err := json.Unmarshal(line, &a); err != nil {
			return err
		}
		lg.Awaits = append(lg.Awaits, a)
	case abi.EvLoc:
		var l LocEnd
		if err := json.Unmarshal(line, &l); err != nil {
			return err
		}
		lg.Locs = append(lg.Locs, l)
	case abi.EvFinish:
		var f Finish
		if err := json.Unmarshal(line, &f); err != nil {
			return err
		}
		lg.Finish = &f
	default:
		return fmt.Errorf("unknown record %q", rec.Ev)
	}
	return nil
}

// Delay returns the delay with the given id, or nil.
func (lg *Log) Delay(id uint64) *Delay { return lg.byID[id] }

// Ablated reports whether the run switched part p of the algorithm off
// (WAFL_ABLATE).
func (lg *Log) Ablated(p abi.Ablation) bool {
	if lg.Setup == nil {
		return false
	}
	a, _ := abi.ParseAblation(lg.Setup.Ablate)
	return a.Has(p)
}
