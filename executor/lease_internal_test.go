package executor

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The fence falls once when no heartbeat was appended for Fence: running
// opcodes are cancelled (as requested: they end canceled, rolled back)
// and migration phases superseded; a switch is refused until a heartbeat
// lands again.
func TestFenceCancelsMovesAndRefusesSwitches(t *testing.T) {
	e := &Executor{cfg: Config{Heartbeat: 10 * time.Millisecond, Fence: 50 * time.Millisecond},
		log: slog.New(slog.DiscardHandler), ended: map[opKey]bool{}, cancelled: map[opKey]string{}, tasks: map[opKey]*task{}}
	e.mig.init()
	start := time.Now()
	e.lease.renewed(start)
	if err := e.mayAct("switch"); err != nil {
		t.Fatalf("lease fresh, yet %v", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	k := opKey{"r1", 0, 0}
	e.tasks[k] = &task{key: k, ctx: ctx, cancel: cancel}
	mctx, mcancel := context.WithCancelCause(context.Background())
	e.mig.tasks["m1"] = &migTask{ctx: mctx, cancel: mcancel}

	if e.lease.lapsed(start.Add(40*time.Millisecond), e.cfg.Fence) {
		t.Fatal("lapsed within the fence")
	}
	later := start.Add(60 * time.Millisecond)
	if !e.lease.lapsed(later, e.cfg.Fence) || e.lease.lapsed(later, e.cfg.Fence) {
		t.Fatal("the fence must fall exactly once")
	}
	e.fence()
	if !e.requested(e.tasks[k]) || !strings.Contains(context.Cause(ctx).Error(), "fenced") {
		t.Fatalf("opcode not cancelled by the fence: %v", context.Cause(ctx))
	}
	if !errors.Is(context.Cause(mctx), errSuperseded) {
		t.Fatalf("phase not superseded by the fence: %v", context.Cause(mctx))
	}
	// Wall clock past the fence: the switch is refused, as fatal (the
	// driver is not called, the source untouched).
	e.lease = lease{}
	e.lease.renewed(time.Now().Add(-time.Second))
	if err := e.mayAct("switch"); err == nil || IsTransient(err) || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("switch without a lease: %v; want a fatal fenced error", err)
	}
	e.lease.renewed(time.Now())
	if err := e.mayAct("switch"); err != nil {
		t.Fatalf("renewed, yet %v", err)
	}
}
