// Package winiopipe reproduces microsoft/go-winio issue #44 ("Nil pointer
// dereference in prepareIo").
//
// The pipe listener creates a server pipe p and starts a goroutine that waits
// for a client with p.connectPipe(), capturing the local variable p. When the
// listener is closed, the listener routine closes the pipe and sets p = nil
// before the goroutine has finished. Normally the goroutine is already waiting
// inside connectPipe when Close arrives; if it starts late, it calls
// connectPipe through the nil captured pointer.
//
// Kind: use-after-dispose (use of the captured p in the goroutine, p = nil in
// the listener routine).
package winiopipe

import (
	"errors"
	"sync"
)

var (
	// ErrFileClosed is returned by I/O on a closed pipe.
	ErrFileClosed = errors.New("file has already been closed")
	// ErrPipeListenerClosed is returned by Accept after Close.
	ErrPipeListenerClosed = errors.New("use of closed network connection")
)

type win32File struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	closing bool
	closed  chan struct{}
	clients chan struct{}
}

// prepareIo registers an I/O operation on the handle.
func (f *win32File) prepareIo() error {
	f.wg.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		f.wg.Done()
		return ErrFileClosed
	}
	return nil
}

// connectPipe waits for a client to connect (ConnectNamedPipe).
func (f *win32File) connectPipe() error {
	if err := f.prepareIo(); err != nil {
		return err
	}
	defer f.wg.Done()
	select {
	case <-f.clients:
		return nil
	case <-f.closed:
		return ErrFileClosed
	}
}

// Close cancels pending I/O and waits for it.
func (f *win32File) Close() error {
	f.mu.Lock()
	if f.closing {
		f.mu.Unlock()
		return nil
	}
	f.closing = true
	close(f.closed)
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}

// Listener is a named-pipe listener.
type Listener struct {
	clients chan struct{}
	closeCh chan struct{}
	doneCh  chan struct{}
	result  error
}

// Listen starts the listener routine.
func Listen(clients chan struct{}) *Listener {
	l := &Listener{clients: clients, closeCh: make(chan struct{}), doneCh: make(chan struct{})}
	go l.listenerRoutine()
	return l
}

func (l *Listener) listenerRoutine() {
	defer close(l.doneCh)
	p := &win32File{closed: make(chan struct{}), clients: l.clients}
	ch := make(chan error)
	go func() {
		ch <- p.connectPipe()
	}()
	var err error
	select {
	case err = <-ch:
		if err != nil {
			p.Close()
			p = nil
		}
	case <-l.closeCh:
		// Abort the connect request by closing the handle.
		p.Close()
		p = nil // BUG: the connect goroutine may not have used p yet
		err = <-ch
		if err == nil || err == ErrFileClosed {
			err = ErrPipeListenerClosed
		}
	}
	l.result = err
}

// Close closes the listener and returns the listener routine's result.
func (l *Listener) Close() error {
	close(l.closeCh)
	<-l.doneCh
	return l.result
}
