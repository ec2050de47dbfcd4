package report

// Scenario programs: each TestScenario* function is a small "test under
// detection" that calls the inject hook before every access, the way
// instrumented code does; the site table gives each site the line of its
// access, which is the line a traceback shows. They run only in a child
// process that TestMain set up with WAFL_MODE=detect; the outer tests in
// outcome_test.go write the plan and the site table, run the child and
// judge it with Outcome. Site ids and lines come from the "// site:N kind
// expr" markers below.

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/memorder/wafl/hook"
	"github.com/memorder/wafl/inject"
)

// envScenario marks the child process.
const envScenario = "WAFL_TEST_SCENARIO"

func TestMain(m *testing.M) {
	if os.Getenv(envScenario) != "" {
		// hook's init has called inject.Setup (WAFL_MODE=detect); the
		// generated TestMain ends with hook.Finish, which drains.
		if hook.CurrentMode() != hook.ModeDetect {
			panic("scenario child without a detection run")
		}
		code := m.Run()
		hook.Finish()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func scenarioOnly(t *testing.T) {
	if os.Getenv(envScenario) == "" {
		t.Skip("scenario program: runs in a child process of the outcome tests")
	}
}

type handler struct{ n int }

// TestScenarioUseBeforeInit: a goroutine initializes h about 20 ms
// before the test goroutine uses it. Delaying the init exposes the use
// of a nil h.
func TestScenarioUseBeforeInit(t *testing.T) {
	scenarioOnly(t)
	var h atomic.Pointer[handler]
	done := make(chan struct{})
	go func() {
		defer close(done)
		inject.At(1, unsafe.Pointer(&h))
		h.Store(&handler{n: 1}) // site:1 atomic-store h
	}()
	time.Sleep(20 * time.Millisecond)
	inject.At(2, unsafe.Pointer(&h))
	_ = h.Load().n // site:2 use h
	<-done
}

// TestScenarioUseAfterDispose: a goroutine uses c about 20 ms before the
// test goroutine disposes of it. Delaying the use exposes it.
func TestScenarioUseAfterDispose(t *testing.T) {
	scenarioOnly(t)
	var c atomic.Pointer[handler]
	c.Store(&handler{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		inject.At(3, unsafe.Pointer(&c))
		_ = c.Load().n // site:3 use c
	}()
	time.Sleep(20 * time.Millisecond)
	inject.At(4, unsafe.Pointer(&c))
	c.Store(nil) // site:4 atomic-store c
	<-done
}

// TestScenarioAfterReturn: like TestScenarioUseAfterDispose, but the test
// returns without waiting for the goroutine; the delayed use panics while
// Finish drains.
func TestScenarioAfterReturn(t *testing.T) {
	scenarioOnly(t)
	var c atomic.Pointer[handler]
	c.Store(&handler{})
	go func() {
		inject.At(5, unsafe.Pointer(&c))
		_ = c.Load().n // site:5 use c
	}()
	time.Sleep(20 * time.Millisecond)
	inject.At(6, unsafe.Pointer(&c))
	c.Store(nil) // site:6 atomic-store c
}

// TestScenarioUnrelatedPanic: a delay is injected at site 7, then the
// test panics on a nil pointer at a line without a site, before reaching
// site 8, the partner of the pair (7 → 8).
func TestScenarioUnrelatedPanic(t *testing.T) {
	scenarioOnly(t)
	var h atomic.Pointer[handler]
	inject.At(7, unsafe.Pointer(&h))
	h.Store(&handler{}) // site:7 atomic-store h
	var nilH *handler
	_ = nilH.n
	_ = h.Load().n // site:8 use h
}

// TestScenarioPanicWithoutDelay panics at site 9, the partner of a pair
// whose delay location (10) never runs.
func TestScenarioPanicWithoutDelay(t *testing.T) {
	scenarioOnly(t)
	var h atomic.Pointer[handler]
	inject.At(9, unsafe.Pointer(&h))
	_ = h.Load().n // site:9 use h
	var never atomic.Pointer[handler]
	inject.At(10, unsafe.Pointer(&never))
	never.Store(&handler{}) // site:10 atomic-store never
}

// TestScenarioInterference is the thesis's Figure 4.2b (NetMQ): the use
// of poller at one line (site 11) runs in a worker goroutine, and in the
// closing goroutine right before the dispose (site 12). Delaying both
// instances delays the dispose as much as the use: no bug. Skipping the
// closing goroutine's instance because the worker's delay at the same
// location is in progress (the interference rule) exposes it.
func TestScenarioInterference(t *testing.T) {
	scenarioOnly(t)
	var poller atomic.Pointer[handler]
	poller.Store(&handler{})
	use := func() int {
		inject.At(11, unsafe.Pointer(&poller))
		return poller.Load().n // site:11 use poller
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		use() // the worker processes a packet
	}()
	time.Sleep(80 * time.Millisecond)
	use() // the closing goroutine, another call context
	inject.At(12, unsafe.Pointer(&poller))
	poller.Store(nil) // site:12 atomic-store poller
	<-done
}

// TestScenarioHB: the init (site 13) and the use (site 14) are ordered by
// a mutex. The delay at the init, taken under the lock, stalls the user
// goroutine until right after it: happens-before inference prunes the
// pair.
func TestScenarioHB(t *testing.T) {
	scenarioOnly(t)
	var mu sync.Mutex
	var h atomic.Pointer[handler]
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		inject.At(13, unsafe.Pointer(&h))
		h.Store(&handler{}) // site:13 atomic-store h
		mu.Unlock()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		inject.At(14, unsafe.Pointer(&h))
		v := h.Load() // site:14 use h
		mu.Unlock()
		if v != nil {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	<-done
}

// TestScenarioHooks is TestScenarioUseAfterDispose through the hooks
// that instrumented code calls, in detect mode.
func TestScenarioHooks(t *testing.T) {
	scenarioOnly(t)
	var c atomic.Pointer[handler]
	c.Store(&handler{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		hook.Use(15, unsafe.Pointer(&c))
		_ = c.Load().n // site:15 use c
	}()
	time.Sleep(20 * time.Millisecond)
	hook.Dispose(16, unsafe.Pointer(&c))
	c.Store(nil) // site:16 atomic-store c
	<-done
}

// TestScenarioCheckThenAct is a non-atomic "close once" (quic-go #1499):
// each closer loads closeErr and, seeing nil, stores it and closes ch.
// Delaying the store (the init) lets the second closer see nil at the
// load (ℓ2) and later close ch a second time: the failure is a double
// close, after ℓ2, in the goroutine that ran ℓ2 during the delay.
func TestScenarioCheckThenAct(t *testing.T) {
	scenarioOnly(t)
	var closeErr atomic.Pointer[handler]
	ch := make(chan struct{})
	closeOnce := func() {
		inject.At(17, unsafe.Pointer(&closeErr))
		if closeErr.Load() != nil { // site:17 atomic-load closeErr
			return
		}
		inject.At(18, unsafe.Pointer(&closeErr))
		closeErr.Store(&handler{}) // site:18 atomic-store closeErr
		inject.At(19, unsafe.Pointer(&ch))
		close(ch) // site:19 close ch
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		closeOnce()
	}()
	time.Sleep(20 * time.Millisecond)
	closeOnce()
	<-done
}

// TestScenarioRepeat reaches one location 20 times from one goroutine.
func TestScenarioRepeat(t *testing.T) {
	scenarioOnly(t)
	var h atomic.Pointer[handler]
	for i := range 20 {
		inject.At(20, unsafe.Pointer(&h))
		h.Store(&handler{n: i}) // site:20 atomic-store h
	}
	_ = h.Load().n // site:21 use h
}
