package hook

import "github.com/memorder/wafl/lcc"

// testsToken is the fork token the main goroutine takes when TestMain
// starts (ForkTests): package initialization, which runs before it on the
// same goroutine, happens before every test.
var testsToken lcc.Token

// ForkTests is called by the instrumented TestMain before the tests run,
// on the main goroutine. Package initialization (and the instrumented
// TestMain's setup) then happens before every test goroutine that calls
// AdoptTests: the testing package starts test goroutines with no fork
// edge of their own, and without one they would look concurrent with
// the package's init (a default pool built in a package-level var).
func ForkTests() {
	testsToken = lcc.Fork()
}

// AdoptTests is the first thing an instrumented Test function does: on a
// goroutine other than main (a test goroutine started by testing) it
// adopts the token of ForkTests, like a callback adopts its creation
// context (AdoptCallback).
func AdoptTests() {
	AdoptCallback(testsToken)
}
