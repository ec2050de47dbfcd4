package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/memorder/wafl/plans"
)

func TestRunTimeout(t *testing.T) {
	p := &plans.Plan{}
	p.Params.MaxDelayPerRunNs = int64(5 * time.Second)
	if got := runTimeout(10*time.Minute, p); got != 10*time.Minute {
		t.Errorf("no preparation duration: %v, want --timeout", got)
	}
	p.SetDuration(int64(300 * time.Millisecond))
	if got := runTimeout(10*time.Minute, p); got != hangFloor+5*time.Second {
		t.Errorf("short test: %v, want the floor plus the delay cap", got)
	}
	if !strings.Contains(timeoutNote(10*time.Minute, p), "taken for a hang") {
		t.Errorf("note: %q", timeoutNote(10*time.Minute, p))
	}
	p.SetDuration(int64(time.Minute))
	if got := runTimeout(10*time.Minute, p); got != 10*time.Minute {
		t.Errorf("long test: %v, want --timeout (shorter than 10× + cap)", got)
	}
	if timeoutNote(10*time.Minute, p) != "" {
		t.Errorf("note without a shorter bound: %q", timeoutNote(10*time.Minute, p))
	}
	p.SetDuration(int64(2 * time.Second))
	if got := runTimeout(30*time.Second, p); got != 30*time.Second {
		t.Errorf("--timeout below the bound: %v", got)
	}
}

// TestNarrowedTimeout: a run of some subtests not yet seen passing alone
// is killed after 10× the preparation run, at least 5 s, plus the delay
// cap, never later than a run of the whole test.
func TestNarrowedTimeout(t *testing.T) {
	p := &plans.Plan{}
	p.Params.MaxDelayPerRunNs = int64(5 * time.Second)
	if got := narrowedTimeout(10*time.Minute, p); got != 10*time.Minute {
		t.Errorf("no preparation duration: %v, want --timeout", got)
	}
	p.SetDuration(int64(300 * time.Millisecond))
	if got := narrowedTimeout(10*time.Minute, p); got != narrowFloor+5*time.Second {
		t.Errorf("short test: %v, want the narrowed floor plus the delay cap", got)
	}
	p.SetDuration(int64(2 * time.Second))
	if got := narrowedTimeout(10*time.Minute, p); got != 25*time.Second {
		t.Errorf("2 s test: %v, want 10× + the cap", got)
	}
	if got := narrowedTimeout(8*time.Second, p); got != 8*time.Second {
		t.Errorf("--timeout below the bound: %v", got)
	}
	p.SetDuration(int64(time.Minute))
	if got, whole := narrowedTimeout(10*time.Minute, p), runTimeout(10*time.Minute, p); got != whole {
		t.Errorf("long test: %v, want the whole test's %v", got, whole)
	}
}
