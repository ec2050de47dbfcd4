package lateserve

import "testing"

// One Run and an immediate Close, as the upstream regression test's loop
// body; the test does not wait for the serve goroutine.
func TestRunClose(t *testing.T) {
	s := Run()
	s.Close()
}
