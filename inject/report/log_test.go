package report

import (
	"reflect"
	"strings"
	"testing"

	"github.com/memorder/wafl/abi"
)

// TestLogTypesCoverRunLog checks that every key the runtime writes
// (abi.RunLog) has a field in the type ParseLog decodes its record into.
func TestLogTypesCoverRunLog(t *testing.T) {
	into := map[string]any{
		abi.EvSetup: Setup{}, abi.EvDelay: Delay{}, abi.EvEnd: logRecord{}, abi.EvSkip: Skip{},
		abi.EvHB: Prune{}, abi.EvReorder: Reorder{}, abi.EvLate: Late{}, abi.EvLoc: LocEnd{}, abi.EvFinish: Finish{},
		abi.EvPanic: Panic{},
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
