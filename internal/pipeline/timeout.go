package pipeline

import (
	"strconv"
	"time"

	"github.com/memorder/wafl/plans"
)

// A detection run that hangs under its delays (a test helper that
// deadlocks once a goroutine is late) would hold its package's detection
// for the whole --timeout. A run takes the time of its preparation run,
// stretched by the load and lengthened by its delays, which the plan caps
// per run: one that takes hangFactor times its preparation run plus that
// cap, and at least hangFloor (six times the default cap of 5 s), is
// killed as a timeout.
const (
	hangFactor = 10
	hangFloor  = 30 * time.Second
)

// runTimeout is the timeout of a detection run of plan: timeout, or the
// hang bound above when it is shorter (plans without the preparation
// run's duration: timeout).
func runTimeout(timeout time.Duration, plan *plans.Plan) time.Duration {
	d := time.Duration(plan.Provenance.DurationNs)
	if d <= 0 {
		return timeout
	}
	bound := max(hangFactor*d, hangFloor) + time.Duration(plan.Params.MaxDelayPerRunNs)
	return min(timeout, bound)
}

// A run of only some subtests of a test none of whose such runs passed
// yet may hang because the subtests need one another (a server goroutine
// that serves them in turn waits for a connection that never comes); its
// failure only makes the test's runs take the whole test
// (plans.Plan.RunWholeTestAfterFailure), so it is killed sooner: after
// hangFactor times the whole test's preparation run, at least narrowFloor,
// plus the plan's delay cap.
const narrowFloor = 5 * time.Second

// narrowedTimeout is the timeout of such a run of plan (runTimeout's when
// that is shorter, or the plan has no preparation run's duration).
func narrowedTimeout(timeout time.Duration, plan *plans.Plan) time.Duration {
	t := runTimeout(timeout, plan)
	d := time.Duration(plan.Provenance.DurationNs)
	if d <= 0 {
		return t
	}
	return min(t, max(hangFactor*d, narrowFloor)+time.Duration(plan.Params.MaxDelayPerRunNs))
}

// timeoutNote says why a detection run of plan timed out before timeout
// ("" when its timeout was timeout).
func timeoutNote(timeout time.Duration, plan *plans.Plan) string {
	t := runTimeout(timeout, plan)
	if t >= timeout {
		return ""
	}
	return "; killed after " + t.Round(time.Second).String() + ": " + strconv.Itoa(hangFactor) +
		"× its preparation run (" + time.Duration(plan.Provenance.DurationNs).Round(time.Millisecond).String() +
		"), at least " + hangFloor.String() + ", plus its delays, is taken for a hang (--timeout bounds it too)"
}
