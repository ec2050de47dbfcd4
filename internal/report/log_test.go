package report

import (
	"reflect"
	"strings"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

// TestLogTypesMatchRunLog keeps the types ParseLog decodes each record
// kind into in step with abi.RunLog, the table the runtime writes by:
// every key of a record has a field, and every field is a key of the
// record (or abi.KeyEv, abi.KeyT), except the fields a Delay gets from its
// end record.
func TestLogTypesMatchRunLog(t *testing.T) {
	into := map[string]any{
		abi.EvSetup: Setup{}, abi.EvDelay: Delay{}, abi.EvEnd: logRecord{}, abi.EvSkip: Skip{},
		abi.EvHB: Prune{}, abi.EvReorder: Reorder{}, abi.EvLate: Late{}, abi.EvLoc: LocEnd{}, abi.EvFinish: Finish{},
		abi.EvPanic: Panic{}, abi.EvTrap: Trap{}, abi.EvAwait: Await{},
	}
	// Delay's fields for its end record (ParseLog fills them from it).
	fromEnd := map[string]bool{"ended": true, "end": true, "actual_ns": true, "prob": true}
	for _, spec := range abi.RunLog {
		v, ok := into[spec.Ev]
		if !ok {
			t.Errorf("ParseLog has no type for %q records", spec.Ev)
			continue
		}
		delete(into, spec.Ev)
		keys := map[string]bool{abi.KeyEv: true, abi.KeyT: true}
		for _, k := range append(append([]string(nil), spec.Keys...), spec.Optional...) {
			keys[k] = true
		}
		tags := map[string]bool{}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			tags[name] = true
			if !keys[name] && !(spec.Ev == abi.EvDelay && fromEnd[name]) {
				t.Errorf("%s field %s reads key %q, which %s records do not have (abi.RunLog)", rt, rt.Field(i).Name, name, spec.Ev)
			}
		}
		for k := range keys {
			if !tags[k] && k != abi.KeyEv && k != abi.KeyT {
				t.Errorf("%s record key %q has no field in %s", spec.Ev, k, rt)
			}
		}
	}
	for ev := range into {
		t.Errorf("ParseLog decodes %q records, which abi.RunLog does not have", ev)
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
