// Package rollbackstop reproduces a lost OnStop in go.uber.org/fx: when
// App.Start's context expires while a later OnStart hook is still running,
// Start returns at once and rolls back in the background with its expired
// context; that rollback runs no OnStop hook but marks the lifecycle
// stopped, so an App.Stop that comes after it runs none either, and the
// OnStop of a hook whose OnStart had completed is never called.
package rollbackstop

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
)

func TestStopAfterTimedOutStartRunsStopHooks(t *testing.T) {
	stopped := make(chan struct{}, 1)
	app := fx.New(
		fx.NopLogger,
		fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.Hook{
				OnStart: func(context.Context) error { return nil },
				OnStop: func(context.Context) error {
					stopped <- struct{}{}
					return nil
				},
			})
			lc.Append(fx.Hook{
				// A slow start: it outlives Start's 50 ms context.
				OnStart: func(ctx context.Context) error {
					time.Sleep(100 * time.Millisecond)
					return ctx.Err()
				},
			})
		}),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := app.Start(ctx); err == nil {
		t.Fatal("Start succeeded; want its context's deadline")
	}
	// The application stops a moment later, after the slow hook returned.
	time.Sleep(200 * time.Millisecond)
	if err := app.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("the OnStop of the hook whose OnStart completed was never called")
	}
}
