package hook

import "github.com/memorder/wafl/inject"

// Before is called before the Lock/RLock call that guards site, a site
// inside a critical section (hoisting, docs/algorithm.md): in a detection
// run the site's delay is injected here, while the lock is not held, and
// not at the site itself (in basic mode: when site is in the trap set).
// Preparation runs ignore it.
func Before(site uint32) {
	if m := mode.Load(); m == uint32(ModeDetect) {
		inject.Before(site)
	} else if m == uint32(ModeBasic) {
		inject.BeforeBasic(site)
	}
}
