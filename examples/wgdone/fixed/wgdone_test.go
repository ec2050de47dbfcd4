package wgdone

import (
	"testing"
	"time"
)

// Each backup completes 20 ms after it is created (the Add follows the
// Create within microseconds; 20 ms keeps a loaded machine from reordering
// them in plain runs).
func TestBackupPodVolumes(t *testing.T) {
	b := NewBackupper(&Controller{latency: 20 * time.Millisecond})
	b.BackupPodVolumes([]string{"data"})
	if got := b.WaitAllPodVolumesProcessed(); len(got) != 1 {
		t.Fatalf("processed %v, want 1 volume", got)
	}
}
