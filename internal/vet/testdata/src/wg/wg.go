// Package wg holds WaitGroup cases: Add after the goroutine that calls
// Done started.
package wg

import "sync"

func late(n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		go func() {
			defer wg.Done()
		}()
		wg.Add(1) // want `possible WaitGroup misuse: wg.Add is called after the goroutine started at wg.go:\d+, which may call Done at wg.go:\d+ first`
	}
	wg.Wait()
}

func early(n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
		}()
	}
	wg.Wait()
}

type backupper struct{ wg sync.WaitGroup }

func (b *backupper) complete() { b.wg.Done() }

func (b *backupper) start() { go b.complete() }

func (b *backupper) Backup() {
	b.start()
	b.wg.Add(1) // want `possible WaitGroup misuse: b.wg.Add is called after the goroutine started at wg.go:\d+`
	b.wg.Wait()
}
