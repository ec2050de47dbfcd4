// Package watchadd follows the send on a closed channel of
// cloudflare/certinel's fswatcher, fixed by PR #18
// (https://github.com/cloudflare/certinel/pull/18, commit bd0a121, released
// in v0.3.1), as the project's own TestClose shows it: New starts a
// goroutine that drains the fsnotify watcher's channels and, once Close has
// closed the watcher, closes errChan on its way out; Watch starts a second
// goroutine that loads the certificate (its error goes to errChan, which the
// test waits for) and then adds the certificate's path to the watcher. When
// Close comes between the load and the Add, Add fails — the watcher is
// closed — and the goroutine sends that error on the errChan the first
// goroutine has just closed: "send on closed channel". The racing send is
// only on the path taken when the race is lost: a passing run never
// executes it.
//
// The watcher here stands in for fsnotify v1.4's inotify backend, simplified
// to the parts the race goes through: Add checks isClosed (a select with a
// default on the done channel) and then adds a watch on the inotify file,
// which fails once the reader goroutine has closed the file; Close closes
// done (once: two concurrent Closes are fsnotify's other bug, #367) and
// waits for the reader goroutine, which closes the file, Events and Errors. The test waits 8 ms between the load error and Close (upstream it
// calls Close at once), so that a plain run adds the path first.
//
// Kind: use-after-dispose (send on closed channel, on an error path).
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

// New creates a Sentry for the certificate at path with the given content
// and starts the goroutine that forwards the watcher's events and errors.
func New(path, pem string) *Sentry {
	watcher := NewWatcher()
	fsw := &Sentry{
		fsnotify: watcher,
		certPath: path,
		pem:      pem,
		tlsChan:  make(chan Certificate),
		errChan:  make(chan error),
		done:     make(chan struct{}),
	}
	go func() {
		defer close(fsw.done)
		defer close(fsw.errChan)
		defer close(fsw.tlsChan)

		eventsCh, errorsCh := watcher.Events, watcher.Errors
		for eventsCh != nil && errorsCh != nil {
			select {
			case _, ok := <-eventsCh:
				if !ok {
					eventsCh = nil
				} else {
					fsw.loadCertificate()
				}
			case err, ok := <-errorsCh:
				if !ok {
					errorsCh = nil
				} else {
					fsw.errChan <- err
				}
			}
		}
	}()
	return fsw
}

// Watch loads the certificate and starts watching its file.
func (w *Sentry) Watch() (<-chan Certificate, <-chan error) {
	go func() {
		w.loadCertificate()
		err := w.fsnotify.Add(w.certPath)
		if err != nil {
			w.errChan <- err // BUG: Close may have made the forwarder close errChan
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
