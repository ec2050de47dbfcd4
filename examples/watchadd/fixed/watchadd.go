// Package watchadd is the fixed twin of ../, fixed the way
// cloudflare/certinel PR #18 did: Watch starts the only goroutine, which
// adds the path before it loads the certificate and owns both channels —
// it sends on errChan and closes it, so no send can come after the close.
package watchadd

import (
	"errors"
	"sync"
)

// ErrBadFD is the error of a watch added on a closed inotify file (EBADF).
var ErrBadFD = errors.New("watchadd: bad file descriptor")

// inotifyFile stands in for the watcher's inotify file descriptor.
type inotifyFile struct {
	mu     sync.Mutex
	closed bool
	next   int
}

func (f *inotifyFile) addWatch(name string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return -1, ErrBadFD
	}
	f.next++
	return f.next, nil
}

func (f *inotifyFile) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

// Event is a file system event.
type Event struct{ Name string }

// Watcher watches paths (fsnotify.Watcher's shape).
type Watcher struct {
	Events chan Event
	Errors chan error

	mu        sync.Mutex
	fd        *inotifyFile
	watches   map[string]int
	done      chan struct{}
	closeOnce sync.Once
	doneResp  chan struct{}
	wake      chan struct{}
}

// NewWatcher starts a watcher and its reader goroutine.
func NewWatcher() *Watcher {
	w := &Watcher{
		Events:   make(chan Event),
		Errors:   make(chan error),
		fd:       &inotifyFile{},
		watches:  make(map[string]int),
		done:     make(chan struct{}),
		doneResp: make(chan struct{}),
		wake:     make(chan struct{}, 1),
	}
	go w.readEvents()
	return w
}

func (w *Watcher) isClosed() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// Add starts watching the named path.
func (w *Watcher) Add(name string) error {
	if w.isClosed() {
		return errors.New("inotify instance already closed")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wd, err := w.fd.addWatch(name)
	if err != nil {
		return err
	}
	w.watches[name] = wd
	return nil
}

// Close stops the watcher and waits for its reader goroutine.
func (w *Watcher) Close() error {
	if w.isClosed() {
		return nil
	}
	w.closeOnce.Do(func() {
		close(w.done)
		w.wake <- struct{}{}
	})
	<-w.doneResp
	return nil
}

// readEvents is the reader goroutine: it waits for the poller and leaves
// once the watcher is closed, closing the file and the channels.
func (w *Watcher) readEvents() {
	defer close(w.doneResp)
	defer close(w.Errors)
	defer close(w.Events)
	defer w.fd.close()
	for {
		if w.isClosed() {
			return
		}
		<-w.wake // the poller: an event or Close's wake-up
	}
}

// Certificate is a loaded certificate.
type Certificate struct{ PEM string }

// Sentry watches a certificate file and reloads it.
type Sentry struct {
	fsnotify *Watcher
	certPath string
	pem      string
	tlsChan  chan Certificate
	errChan  chan error
	done     chan struct{}
}

// New creates a Sentry for the certificate at path with the given content.
func New(path, pem string) *Sentry {
	return &Sentry{
		fsnotify: NewWatcher(),
		certPath: path,
		pem:      pem,
		tlsChan:  make(chan Certificate),
		errChan:  make(chan error),
		done:     make(chan struct{}),
	}
}

// Watch starts the goroutine that adds the certificate's path, loads the
// certificate and forwards the watcher's events and errors.
func (w *Sentry) Watch() (<-chan Certificate, <-chan error) {
	go func() {
		defer close(w.done)
		defer close(w.errChan)
		defer close(w.tlsChan)

		if err := w.fsnotify.Add(w.certPath); err != nil {
			w.errChan <- err
			return
		}
		w.loadCertificate()
		eventsCh, errorsCh := w.fsnotify.Events, w.fsnotify.Errors
		for eventsCh != nil && errorsCh != nil {
			select {
			case _, ok := <-eventsCh:
				if !ok {
					eventsCh = nil
				} else {
					w.loadCertificate()
				}
			case err, ok := <-errorsCh:
				if !ok {
					errorsCh = nil
				} else {
					w.errChan <- err
				}
			}
		}
	}()
	return w.tlsChan, w.errChan
}

// Close closes the watcher and waits for the forwarding goroutine.
func (w *Sentry) Close() error {
	err := w.fsnotify.Close()
	<-w.done
	return err
}

func (w *Sentry) loadCertificate() {
	if w.pem == "" {
		w.errChan <- errors.New("fswatcher: error loading certificate: empty file")
		return
	}
	w.tlsChan <- Certificate{PEM: w.pem}
}
