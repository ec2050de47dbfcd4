package report

import (
	"reflect"
	"strings"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

// TestLogTypesCoverRunLog checks that every key the runtime writes
// (abi.RunLog) has a field in the type ParseLog decodes its record into.
func TestLogTypesCoverRunLog(t *testing.T) {
	into := map[string]any{
		abi.EvSetup: Setup{}, abi.EvDelay: Delay{}, abi.EvEnd: logRecord{}, abi.EvSkip: Skip{},
		abi.EvHB: Prune{}, abi.EvReorder: Reorder{}, abi.EvLate: Late{}, abi.EvLoc: LocEnd{}, abi.EvFinish: Finish{},
		abi.EvPanic: Panic{}, abi.EvTrap: Trap{}, abi.EvAwait: Await{},
	}
	for _, spec := range abi.RunLog {
		v, ok := into[spec.Ev]
		if !ok {
			t.Errorf("ParseLog has no type for %q records", spec.Ev)
			continue
		}
		tags := map[string]bool{}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			tags[name] = true
		}
		for _, k := range append(append([]string(nil), spec.Keys...), spec.Optional...) {
			if !tags[k] {
				t.Errorf("%s record key %q has no field in %s", spec.Ev, k, rt)
			}
		}
	}
}

// TestTrapsJoinThePlan: a basic-mode run's trap records are parsed, and
// the crash is judged against the plan with their pairs (Outcome), which
// ApplyRun then adds for good (PlanOutcome).
func TestTrapsJoinThePlan(t *testing.T) {
	log := `{"ev":"setup","t":0,"unix_ns":1,"pid":1,"run":1,"seed":1,"seed_set":true,"plan":"p","locations":0,"live_locations":0,"ablate":"basic"}
{"ev":"trap","t":5000000,"first":7,"second":9,"kind":"use-before-init","obj":4096,"gap":5000000,"g":2,"delay_ns":6250000}
{"ev":"trap","t":6000000,"first":8,"second":9,"kind":"bogus","obj":4096,"gap":1,"g":2,"delay_ns":1}
`
	lg, err := ParseLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	tr := lg.PlanTraps()
	if len(lg.Traps) != 2 || len(tr) != 1 || tr[0] != (plans.Trap{Kind: plans.UseBeforeInit, First: 7, Second: 9, Object: 4096, GapNs: 5e6}) {
		t.Fatalf("traps %+v → %+v", lg.Traps, tr)
	}
	res := &RunResult{Log: lg, Run: plans.Run{N: 1, Outcome: "pass"}}
	p := &plans.Plan{Version: plans.Version, Params: plans.DefaultParams(), Provenance: plans.Provenance{Basic: true}}
	p.ApplyRun(res.PlanOutcome())
	if l := p.Location(7); l == nil || len(l.Pairs) != 1 || l.Pairs[0].Second != 9 {
		t.Fatalf("plan after the run: %+v", p.Locations)
	}
}
