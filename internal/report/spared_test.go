package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestSparedPartner: the partner-side skips of the delay that exposed a
// bug (abi.SkipPartner records naming its id) are in the report, and only
// those: which side of the pair was delayed, which ran free.
func TestSparedPartner(t *testing.T) {
	log := `{"ev":"setup","t":0,"unix_ns":1,"pid":1,"run":1,"seed":1,"seed_set":true,"plan":"p","locations":2,"live_locations":2,"ablate":""}
{"ev":"delay","t":100,"id":1,"site":5,"g":7,"obj":4096,"ns":10000000,"n":0}
{"ev":"skip","t":200,"site":9,"g":8,"n":0,"why":"partner","by":5,"id":1,"delay_g":7}
{"ev":"skip","t":300,"site":9,"g":8,"n":1,"why":"interference","by":5}
{"ev":"skip","t":400,"site":11,"g":9,"n":0,"why":"partner","by":6,"id":2,"delay_g":3}
`
	lg, err := ParseLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	got := spared(nil, lg, lg.Delay(1))
	if len(got) != 1 || got[0].Site != 9 || got[0].Goroutine != 8 {
		t.Fatalf("spared = %+v, want site 9 in goroutine 8", got)
	}
	if sk := lg.Skips[0]; sk.Delay != 1 || sk.DelayG != 7 {
		t.Errorf("skip record: %+v", sk)
	}
	var buf bytes.Buffer
	b := &Bug{Kind: "check-then-act", Delay: DelayInfo{Goroutine: 7}, Spared: got}
	if err := WriteText(&buf, []*Bug{b}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "spared:") || !strings.Contains(buf.String(), "goroutine 8, not delayed there") {
		t.Errorf("text report lacks the spared side:\n%s", buf.String())
	}
}
