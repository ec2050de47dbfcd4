package wgdone

import (
	"testing"
	"time"
)

// Each backup completes 8 ms after it is created.
func TestBackupPodVolumes(t *testing.T) {
	b := NewBackupper(&Controller{latency: 8 * time.Millisecond})
	b.BackupPodVolumes([]string{"data"})
	if got := b.WaitAllPodVolumesProcessed(); len(got) != 1 {
		t.Fatalf("processed %v, want 1 volume", got)
	}
}
