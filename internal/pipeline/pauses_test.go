package pipeline

import (
	"testing"

	"github.com/memorder/wafl/internal/report"
)

// A recording detection run's trace is read without the run's own delays
// and awaits: runPauses puts them on the trace's clock (setup's mono_ns
// plus the log's times), an unended delay for its planned length.
func TestRunPauses(t *testing.T) {
	l := &report.Log{
		Setup: &report.Setup{MonoNs: 1_000_000},
		Delays: []*report.Delay{
			{Start: 100, Ns: 50, Ended: true, End: 160}, // ran 60 ns
			{Start: 1000, Ns: 40},                       // never ended
		},
		Awaits: []report.Await{{T: 500, Ns: 100}},
	}
	p := runPauses(l)
	if got := p.Total(); got != 60+40+100 {
		t.Fatalf("pause total %d, want 200", got)
	}
	if got := p.Remove(1_000_000 + 2000); got != 1_000_000+2000-200 {
		t.Fatalf("Remove after all pauses = %d", got)
	}
	if got := p.Remove(1_000_000 + 130); got != 1_000_000+100 {
		t.Fatalf("a time inside the first delay maps to %d, want its start", got)
	}
	// A log of an older binary has no mono_ns: nothing is taken out.
	if runPauses(&report.Log{Setup: &report.Setup{}, Delays: l.Delays}) != nil || runPauses(nil) != nil {
		t.Fatal("pauses without a time base")
	}
}
