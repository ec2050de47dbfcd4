// Package tunewakeup reproduces a hang in github.com/panjf2000/ants/v2
// v2.12.1: Pool.Tune raises the capacity and wakes the callers blocked in
// Submit (cond.Signal / cond.Broadcast) without holding the pool's lock,
// the cond's Locker. A Submit that has checked the capacity (full) under
// that lock but not yet reached cond.Wait misses the wake-up and waits
// forever, although the pool now has room.
//
//	go test -run TestTuneWakesBlockedSubmit .  # plain: passes in most runs
//	go test -run TestTuneDuringSubmitCheck .   # passes plainly; hangs (fails
//	                                           # after 2s) every time with
//	                                           # sleep.patch applied to a
//	                                           # scratch copy of ants
package tunewakeup

import (
	"testing"
	"time"

	"github.com/panjf2000/ants/v2"
)

// tuneOnce fills a pool of one worker, starts a Submit that must block,
// waits wait, raises the capacity to 2 and reports whether the blocked
// Submit returned within limit.
func tuneOnce(t *testing.T, wait, limit time.Duration) bool {
	t.Helper()
	c := make(chan struct{})
	defer close(c)
	p, err := ants.NewPool(1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if err := p.Submit(func() { <-c }); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Submit(func() { <-c }) }()
	time.Sleep(wait)
	p.Tune(2) // room for the blocked Submit: Tune signals it
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		return true
	case <-time.After(limit):
		return false
	}
}

// TestTuneWakesBlockedSubmit races Tune with a Submit that is about to
// block, many times. Every schedule here is one the API allows: Tune is
// documented to change the capacity of a running pool.
func TestTuneWakesBlockedSubmit(t *testing.T) {
	for i := range 20000 {
		if !tuneOnce(t, 0, 2*time.Second) {
			t.Fatalf("iteration %d: Submit still blocked 2s after Tune raised the capacity to 2 (the wake-up was lost)", i)
		}
	}
}

// TestTuneDuringSubmitCheck calls Tune 2 ms after the Submit started:
// plainly the Submit waits in cond.Wait by then and is woken. With
// sleep.patch (10 ms between retrieveWorker's capacity check and its
// cond.Wait) Tune's signal comes while the Submit is between the two, and
// the Submit never returns.
func TestTuneDuringSubmitCheck(t *testing.T) {
	if !tuneOnce(t, 2*time.Millisecond, 2*time.Second) {
		t.Fatal("Submit still blocked 2s after Tune raised the capacity to 2 (the wake-up was lost)")
	}
}
