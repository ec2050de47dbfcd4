//go:build !unix

package workdir

import "os"

// Without flock the lock is not enforced.
func tryLock(*os.File) error { return nil }

func unlockFile(*os.File) {}
