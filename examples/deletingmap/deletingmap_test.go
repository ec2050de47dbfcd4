package deletingmap

import (
	"testing"
	"time"
)

// The store removes the backup and reports an error; the reconcile loop
// runs 8 ms later, finds the backup gone and removes its entry.
func TestDeleteFailsWhileReconciled(t *testing.T) {
	const url = "s3://backups@us-east-1/backupstore?backup=backup-1&volume=vol-1"
	bc := NewController(NewStore(url))
	bc.StartDeleting(url)
	time.Sleep(8 * time.Millisecond)
	if !bc.Reconcile(url) {
		t.Error("backup still in the store")
	}
	bc.Wait()
}
