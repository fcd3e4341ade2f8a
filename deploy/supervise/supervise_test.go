package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/supervise"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/events/retry"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/process"
	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/planner/service"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/projector/notary"
)

var fast = retry.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}

// A part that fails for a while is restarted until it runs; each restart
// is heard; its own end (ctx) is a clean nil.
func TestRestartsUntilRunning(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var restarts []int
	calls := 0
	err := supervise.Run(ctx, supervise.Part{Name: "p", Backoff: fast,
		OnRestart: func(n int, _ error) { restarts = append(restarts, n) }},
		func(ctx context.Context) error {
			calls++
			switch calls {
			case 1:
				return errors.New("connection refused")
			case 2:
				return nil // stopped by itself: restarted too
			}
			cancel()
			<-ctx.Done()
			return ctx.Err()
		})
	if err != nil {
		t.Fatalf("Run = %v, want nil at the context's end", err)
	}
	if calls != 3 || fmt.Sprint(restarts) != "[1 2]" {
		t.Fatalf("calls %d, restarts %v; want 3 calls and restarts [1 2]", calls, restarts)
	}
}

// An error no restart cures is returned at once, whatever wraps it: each
// service marks its own (retry.Permanent), and the supervisor knows none
// of them. The list is the services' contract with it, held here so a
// sentinel that loses its mark fails a test rather than restarting a
// part forever.
func TestPermanentErrorEnds(t *testing.T) {
	own := retry.Permanent(errors.New("part: invalid config"))
	for _, target := range []error{own, kafka.ErrInvalidConfig, kafka.ErrUndecodable, kafka.ErrFenced, kafka.ErrTopicConfig,
		service.ErrInvalidConfig, projector.ErrInvalidConfig, projector.ErrSchemaOutdated, projector.ErrSchema,
		executor.ErrInvalidConfig, notary.ErrInvalidConfig, gateway.ErrInvalidConfig,
		sim.ErrInvalidConfig, zfs.ErrInvalidConfig, process.ErrInvalidConfig, qemu.ErrInvalidConfig} {
		calls := 0
		err := supervise.Run(t.Context(), supervise.Part{Name: "p", Backoff: fast}, func(context.Context) error {
			calls++
			return fmt.Errorf("part: %w", target)
		})
		if !errors.Is(err, target) || calls != 1 {
			t.Errorf("%v: Run = %v after %d calls; want it returned after 1", target, err, calls)
		}
	}
	if supervise.Permanent(errors.New("dial tcp: connection refused")) {
		t.Error("a refused connection is reported permanent")
	}
}
