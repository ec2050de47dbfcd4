package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// lockWork takes the work directory's lock file (<work>/lock) for the
// whole invocation, so that two wafl processes never write one work
// directory at once. It does not wait: a held lock is an error that says
// which process holds it. The lock is an advisory file lock, released by
// the kernel when the process ends, so a killed wafl leaves no stale lock.
func lockWork(ws *workspace) (unlock func(), err error) {
	path := ws.path("lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("work directory lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		}
		return nil, fmt.Errorf("the work directory %s is in use by another wafl (%s); wait for it to finish, or give this one its own work directory with --dir",
			ws.work, who)
	}
	_ = f.Truncate(0)
	fmt.Fprintf(f, "pid %d, started %s: %s\n", os.Getpid(), time.Now().Format(time.RFC3339),
		strings.Join(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...), " "))
	return func() {
		_ = f.Truncate(0)
		unlockFile(f)
		f.Close()
	}, nil
}
