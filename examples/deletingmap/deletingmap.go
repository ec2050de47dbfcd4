// Package deletingmap follows longhorn-manager's backup controller
// (https://github.com/longhorn/longhorn/issues/13245, fixed by
// https://github.com/longhorn/longhorn-manager/pull/4828): a map from
// backup URL to the status of its deletion in the backup store, guarded by
// a mutex. Deleting a backup records a "Deleting" entry and starts the
// deletion in the backup store on a goroutine; when that command fails,
// the goroutine writes the error into the entry. The reconcile loop
// removes the entry once the backup is gone from the store. Both hold the
// lock, but nothing orders the entry's lifetime: when the store deleted
// the backup and still reported an error (a lock it could not release),
// the reconcile may remove the entry before the goroutine writes the
// error, and the goroutine dereferences the nil status it looked up:
// "invalid memory address or nil pointer dereference". In every
// delay-free run the goroutine writes the error at once and the reconcile
// comes 8 ms later.
//
// Kind: use-after-dispose (nil pointer from a deleted map entry).
package deletingmap

import (
	"errors"
	"sync"
)

// Deletion states of a backup.
const (
	StateDeleting = "Deleting"
	StateError    = "Error"
)

// DeletingStatus is the state of one backup's deletion in the store.
type DeletingStatus struct {
	State        string
	ErrorMessage string
}

// Store is the backup store: the backups it holds, by URL.
type Store struct {
	mu      sync.Mutex
	backups map[string]bool
}

// NewStore returns a store holding the given backups.
func NewStore(urls ...string) *Store {
	s := &Store{backups: map[string]bool{}}
	for _, u := range urls {
		s.backups[u] = true
	}
	return s
}

// errLock is what the store's delete command reports when it removed the
// backup but could not release the backup volume's lock.
var errLock = errors.New("failed to release the backup volume lock")

// Delete removes the backup at url and fails to release its lock.
func (s *Store) Delete(url string) error {
	s.mu.Lock()
	delete(s.backups, url)
	s.mu.Unlock()
	return errLock
}

// Has reports whether the store still holds the backup at url.
func (s *Store) Has(url string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backups[url]
}

// BackupController deletes backups from the store.
type BackupController struct {
	store *Store
	done  sync.WaitGroup

	deletingMapLock       sync.Mutex
	inProgressDeletingMap map[string]*DeletingStatus
}

// NewController returns a controller for the store.
func NewController(s *Store) *BackupController {
	return &BackupController{store: s, inProgressDeletingMap: map[string]*DeletingStatus{}}
}

// StartDeleting marks the backup at url as being deleted and starts the
// deletion in the store.
func (bc *BackupController) StartDeleting(url string) {
	bc.deletingMapLock.Lock()
	bc.inProgressDeletingMap[url] = &DeletingStatus{State: StateDeleting}
	bc.deletingMapLock.Unlock()
	bc.done.Add(1)
	go func() {
		defer bc.done.Done()
		if err := bc.store.Delete(url); err != nil {
			bc.setInProgressDeletion(url, StateError, err.Error())
		}
	}()
}

// setInProgressDeletion records the state of the deletion of url.
func (bc *BackupController) setInProgressDeletion(url, state, msg string) {
	bc.deletingMapLock.Lock()
	defer bc.deletingMapLock.Unlock()
	// BUG: the reconcile may have removed the entry since the deletion
	// started; nothing checks that it is still there.
	bc.inProgressDeletingMap[url].State = state
	bc.inProgressDeletingMap[url].ErrorMessage = msg
}

// Reconcile removes the bookkeeping of the deletion of url once the
// backup is gone from the store, and reports whether it is.
func (bc *BackupController) Reconcile(url string) bool {
	if bc.store.Has(url) {
		return false
	}
	bc.deletingMapLock.Lock()
	defer bc.deletingMapLock.Unlock()
	delete(bc.inProgressDeletingMap, url)
	return true
}

// Wait waits for the deletions in the store to finish.
func (bc *BackupController) Wait() { bc.done.Wait() }
