// Package timerhandler reproduces the pattern of IBM/sarama issue #52
// ("Changing recovery function can cause panic"): a handler func is set, a
// goroutine is spawned that will call it, and the handler is then set to
// nil; the goroutine calls a nil func.
//
// Here the goroutine is a time.AfterFunc callback, started by the time
// package, which wafl does not instrument: the consumer builds its
// configuration, sets its handler and arms a retry timer whose callback
// reads the configuration and calls the handler; Close clears the handler.
// The configuration and the handler are set before the timer is armed, so
// the callback can never see them unset: the callback carries the context
// of the call that armed it, and those pairs are not candidates. Close,
// though, runs after arming: a callback that fires late calls a nil
// handler.
//
// Kind: use-after-dispose (use of c.handler in the timer callback, dispose
// in Close).
package timerhandler

import (
	"sync"
	"time"
)

// Config is the consumer's configuration.
type Config struct {
	Retries int
}

// Consumer retries a message once after a back-off.
type Consumer struct {
	cfg     *Config
	handler func(msg string)

	mu      sync.Mutex
	started chan struct{}
	done    chan struct{}
}

// NewConsumer builds a consumer.
func NewConsumer() *Consumer {
	return &Consumer{started: make(chan struct{}), done: make(chan struct{})}
}

// Start sets up the consumer and arms the retry of msg after backoff.
func (c *Consumer) Start(handle func(string), msg string, backoff time.Duration) {
	c.cfg = &Config{Retries: 1}
	c.handler = handle
	time.AfterFunc(backoff, func() {
		defer close(c.done)
		close(c.started)
		for i := 0; i < c.cfg.Retries; i++ {
			c.handler(msg) // BUG: Close may have cleared the handler
		}
	})
}

// Started is closed when the retry starts.
func (c *Consumer) Started() <-chan struct{} { return c.started }

// Retried is closed once the retry ran.
func (c *Consumer) Retried() <-chan struct{} { return c.done }

// Close stops handling messages.
func (c *Consumer) Close() {
	c.mu.Lock()
	c.handler = nil
	c.mu.Unlock()
}
