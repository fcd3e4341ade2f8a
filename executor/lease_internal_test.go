package executor

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/test/testenv"
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

// A phase fenced while its notice to the target still waited for the log
// (a slow log at the executor's start made the lease fall) ends canceled
// at once: the executor goes on running, so no next start would run it,
// and its migration would otherwise wait for it forever (test/partition
// hung so on three real brokers).
func TestPhaseFencedBeforeItBeganEndsCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, kcfg := testenv.Events(t, ctx)
	cfg := kcfg
	cfg.TransactionalID = "executor-n1"
	prod, err := kafka.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	e := &Executor{cfg: Config{Node: "n1", Heartbeat: time.Second, Fence: 4 * time.Second}.withDefaults(),
		log: slog.New(slog.DiscardHandler), actor: "executor/n1", prod: prod, owed: newOwed(0), base: t.Context()}
	e.mig.init()
	d := events.MigrationPhaseDispatched{Migration: "m1", Instance: "vm1", Node: "n1", Seq: 1,
		Phase: events.PhaseBegin, Source: "n1", Target: "n2"}
	pctx, pcancel := context.WithCancelCause(context.Background())
	pcancel(errFencedPhase) // the fence fell before the notice was appended
	task := &migTask{key: migKey{"m1", 1}, dispatch: events.New(d, events.WithProducer("test")), d: d,
		ctx: pctx, cancel: pcancel, done: make(chan struct{})}
	e.wg.Add(1)
	e.runPhase(task)
	if !e.mig.ended[task.key] {
		t.Fatal("the fenced phase did not end: it would wait for a next start that never comes")
	}
	recs, err := kafka.ReadAll(ctx, kcfg, events.TopicOpcodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		payload, err := r.Event.DecodePayload()
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := payload.(events.MigrationPhaseEnded); ok && p.Migration == "m1" {
			if p.Status != events.JobCanceled || !strings.Contains(p.Error, "fenced") {
				t.Fatalf("the fenced phase ended %s (%s); want canceled, fenced", p.Status, p.Error)
			}
			return
		}
	}
	t.Fatal("no MigrationPhaseEnded in the log")
}
