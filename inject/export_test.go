package inject

// SetDecisionHook installs f as the decision hook (nil removes it), for
// the crash attribution tests of package inject_test.
func SetDecisionHook(f func(site uint32)) {
	if f == nil {
		decisionHook.Store(nil)
		return
	}
	decisionHook.Store(&f)
}
