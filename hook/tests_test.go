package hook

import (
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/lcc"
)

// TestForkAdoptTests checks that a test goroutine adopts the main
// goroutine's token taken at TestMain, so that package initialization is
// ordered before the test.
func TestForkAdoptTests(t *testing.T) {
	path := start(t, "")
	main := lcc.Goid()
	ForkTests()
	tok := testsToken
	t.Cleanup(func() { testsToken = lcc.Token{} })
	AdoptTests() // on the main goroutine: no row
	var child uint64
	done := make(chan struct{})
	go func() { // a test goroutine started by testing
		defer close(done)
		child = lcc.Goid()
		AdoptTests()
	}()
	<-done
	Finish()
	var forks []abi.RawEvent
	for _, e := range readSpill(t, path) {
		if e.Op == abi.OpFork {
			forks = append(forks, e)
		}
	}
	if len(forks) != 1 || forks[0].G != main || forks[0].Obj != child || forks[0].Clock != tok.Clock {
		t.Fatalf("fork rows %+v, want one from %d to %d at clock %d", forks, main, child, tok.Clock)
	}
}
