// Package wgdone reproduces velero issue #8657 ("Panic on
// WaitAllPodVolumesProcessed"): the pod volume backupper creates a
// PodVolumeBackup and only then calls b.wg.Add(1); the informer handler
// that sees the backup complete calls b.wg.Done(). If the backup completes
// before the Add, Done runs first and the WaitGroup counter goes negative
// ("sync: negative WaitGroup counter").
//
// Here the controller completes each backup about 20 ms after it is
// created, so in plain runs the Add is long done. A delay before the Add
// lets the controller's Done run first.
//
// Kind: use-before-init (Add is the init of the WaitGroup, Done the use).
package wgdone

import (
	"sync"
	"time"
)

// Controller processes PodVolumeBackups and reports completions.
type Controller struct {
	latency  time.Duration
	mu       sync.Mutex
	complete func(name string)
}

// Create queues a backup; it completes after the controller's latency.
func (c *Controller) Create(name string) {
	c.mu.Lock()
	done := c.complete
	c.mu.Unlock()
	time.AfterFunc(c.latency, func() { done(name) })
}

// Backupper backs up the volumes of a pod.
type Backupper struct {
	ctrl *Controller
	wg   sync.WaitGroup

	mu   sync.Mutex
	done []string
}

// NewBackupper registers its completion handler with the controller.
func NewBackupper(c *Controller) *Backupper {
	b := &Backupper{ctrl: c}
	c.mu.Lock()
	c.complete = b.handleComplete
	c.mu.Unlock()
	return b
}

func (b *Backupper) handleComplete(name string) {
	b.mu.Lock()
	b.done = append(b.done, name)
	b.mu.Unlock()
	b.wg.Done()
}

// BackupPodVolumes starts one backup per volume.
func (b *Backupper) BackupPodVolumes(volumes []string) {
	for _, v := range volumes {
		b.ctrl.Create(v)
		b.wg.Add(1) // BUG: the backup may complete before it is counted
	}
}

// WaitAllPodVolumesProcessed waits for every backup and returns them.
func (b *Backupper) WaitAllPodVolumesProcessed() []string {
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.done...)
}
