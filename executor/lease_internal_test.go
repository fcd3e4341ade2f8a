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
	e := &Executor{cfg: Config{Heartbeat: 10 * time.Millisecond, Fence: 50 * time.Millisecond}, lease: &Lease{},
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
	e.lease = &Lease{}
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
	e, d, read := fencedPhaseWorld(t)
	pctx, pcancel := context.WithCancelCause(context.Background())
	pcancel(errFencedPhase) // the fence fell before the notice was appended
	task := &migTask{key: migKey{"m1", 1}, dispatch: events.New(d, events.WithProducer("test")), d: d,
		ctx: pctx, cancel: pcancel, done: make(chan struct{})}
	e.wg.Add(1)
	e.runPhase(task)
	if !e.mig.ended[task.key] {
		t.Fatal("the fenced phase did not end: it would wait for a next start that never comes")
	}
	read()
}

// A phase dispatched while the fence is down never starts: it ends
// canceled, fenced, as one the fence stopped (lease.admits).
func TestPhaseDispatchedWhileFencedEndsCanceled(t *testing.T) {
	e, d, read := fencedPhaseWorld(t)
	e.lease.renewed(time.Now().Add(-time.Minute))
	if !e.lease.lapsed(time.Now(), e.cfg.Fence) {
		t.Fatal("the fence did not fall")
	}
	e.submitPhase(events.New(d, events.WithProducer("test")), d, 0)
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the phase dispatched while fenced did not end within a minute: it started")
	}
	read()
}

// fencedPhaseWorld is an executor of n1 on the test broker that has not
// started, a begin phase dispatched to it, and a check that the log ends
// that phase canceled because of the fence.
func fencedPhaseWorld(t *testing.T) (*Executor, events.MigrationPhaseDispatched, func()) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	_, kcfg := testenv.Events(t, ctx)
	cfg := kcfg
	cfg.TransactionalID = "executor-n1"
	prod, err := kafka.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	e := &Executor{cfg: Config{Node: "n1", Heartbeat: time.Second, Fence: 4 * time.Second}.withDefaults(), lease: &Lease{},
		log: slog.New(slog.DiscardHandler), actor: "executor/n1", prod: prod, owed: newOwed(0), base: t.Context()}
	e.mig.init()
	d := events.MigrationPhaseDispatched{Migration: "m1", Instance: "vm1", Node: "n1", Seq: 1,
		Phase: events.PhaseBegin, Source: "n1", Target: "n2"}
	return e, d, func() {
		t.Helper()
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
}

// After the fence falls, nothing dispatched before the lease is regained
// starts: the executor, cut off, may read such a dispatch only after the
// heal, when the planner may already have declared the node lost and
// failed the move (test/partition saw a begin phase dispatched during a
// cut run after it and end success on a lost node). What is dispatched
// once the lease holds again starts; an executor whose fence never fell
// (just started, its first heartbeat not yet appended) starts anything.
func TestFencedExecutorStartsNothingDispatchedBeforeItsLeaseIsBack(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	fence := 8 * time.Second
	var l Lease
	if !l.admits(t0.Add(-time.Hour)) {
		t.Fatal("a fresh executor refused an old dispatch: a restart could not resume its owed moves")
	}
	l.renewed(t0)
	// A heartbeat counts only if it landed before the lease would lapse;
	// one begun a second later has seven seconds, not eight.
	if d := l.deadline(t0.Add(time.Second), fence); !d.Equal(t0.Add(fence)) {
		t.Fatalf("a heartbeat's deadline while the lease holds: %s after the renewal; want the fence", d.Sub(t0))
	}
	if !l.lapsed(t0.Add(fence), fence) {
		t.Fatal("the fence did not fall")
	}
	cut := t0.Add(5 * time.Second) // dispatched while cut off
	if d := l.deadline(t0.Add(time.Minute), fence); !d.Equal(t0.Add(time.Minute + fence)) {
		t.Fatalf("a heartbeat's deadline after the fall: %s; want a fence from its start", d.Sub(t0))
	}
	if l.admits(cut) || l.admits(t0.Add(time.Minute)) {
		t.Fatal("admitted a dispatch while the fence is down")
	}
	l.started(t0.Add(20 * time.Second)) // a fresh Executor of the process: its producer was fenced
	if l.admits(t0.Add(time.Minute)) {
		t.Fatal("a fresh Executor's start brought the lease back without a heartbeat")
	}
	back := t0.Add(30 * time.Second)
	if since, prove := l.renewed(back); !prove || !since.Equal(t0) {
		t.Fatalf("the first heartbeat after the fall: prove %v since %s; want its proof, since the last renewal", prove, since)
	}
	if l.admits(back.Add(time.Second)) {
		t.Fatal("admitted a dispatch before the heartbeat's proof (regain.go)")
	}
	if _, again := l.renewed(back.Add(time.Second)); again {
		t.Fatal("a second proof while the first is under way")
	}
	l.unproven() // the log could not be read: the next heartbeat tries again, from as far back
	if since, prove := l.renewed(back.Add(2 * time.Second)); !prove || !since.Equal(t0) {
		t.Fatalf("after a proof given up: prove %v since %s; want a proof from the last renewal before the fall", prove, since)
	}
	l.regain(back)
	for _, c := range []struct {
		stamp time.Time
		want  bool
	}{
		{t0.Add(-time.Second), false}, // before the fall, read only now
		{cut, false},                  // during the cut
		{back.Add(-time.Millisecond), false},
		{back, true},
		{back.Add(time.Second), true}, // the planner's, once the lease is back
	} {
		if got := l.admits(c.stamp); got != c.want {
			t.Errorf("admits(dispatched %s after the first renewal) = %v, want %v", c.stamp.Sub(t0), got, c.want)
		}
	}
	if _, prove := l.renewed(back.Add(3 * time.Second)); prove || l.admits(cut) {
		t.Fatal("a second renewal admitted a dispatch from the cut")
	}
}

// An Executor started afresh in the same process (its predecessor's
// producer fenced by the log, as a long cut makes the broker do) keeps the
// fence: the opcode its predecessor was running when the fence fell is
// owed, yet it does not start again; it ends canceled, fenced. With a
// lease of its own it started again, 14 s after the planner had declared
// the node lost (test/partition, on three brokers).
func TestAFreshExecutorKeepsItsPredecessorsFence(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, kcfg := testenv.Events(t, ctx)
	l := &Lease{}
	l.renewed(time.Now().Add(-time.Minute))
	if !l.lapsed(time.Now(), 4*time.Second) {
		t.Fatal("the fence did not fall")
	}
	cfg := kcfg
	cfg.TransactionalID = "executor-n1"
	e, err := New(Config{Node: "n1", Kafka: cfg, Heartbeat: time.Second, Fence: 4 * time.Second, Lease: l,
		Logger: slog.New(slog.DiscardHandler), PlainTransfer: true}, driverFunc(func() { t.Error("the driver ran") }))
	if err != nil {
		t.Fatal(err)
	}
	defer e.prod.Close()
	e.base = t.Context()
	d := events.OpcodeDispatched{Request: "r1", Job: 0, Index: 0, Node: "n1",
		Opcode: events.Opcode{OpID: events.OpInstanceMigrate, Instance: "vm1", From: "n1", To: "n2"}}
	e.submit(events.New(d, events.WithProducer("planner"),
		events.WithReason(events.Reason{Actor: "planner", Why: "evacuate n1"})), d, 0)
	e.wg.Wait()
	recs, err := kafka.ReadAll(ctx, kcfg, events.TopicOpcodes)
	if err != nil {
		t.Fatal(err)
	}
	var ended bool
	for _, r := range recs {
		switch p, _ := r.Event.DecodePayload(); p := p.(type) {
		case events.OpcodeStarted:
			t.Fatalf("the opcode started again under a fallen fence: %s", r)
		case events.OpcodeEnded:
			if p.Status != events.JobCanceled || !strings.Contains(p.Error, "fenced") {
				t.Fatalf("ended %s (%s); want canceled, fenced", p.Status, p.Error)
			}
			ended = true
		}
	}
	if !ended {
		t.Fatal("no OpcodeEnded in the log: the opcode would stay owed")
	}
}

// driverFunc is a driver that calls ran and fails.
type driverFunc func()

func (f driverFunc) Run(context.Context, Op, func(Progress)) (Result, error) {
	f()
	return Result{}, errors.New("not run in this test")
}

// A source whose process starts again after the planner declared it lost
// reads the cancel the planner sent (planner/migration/lost.go) after the
// sync it owed: with a lease of its own, fresh, it runs neither, and ends
// the cancel canceled, saying why, so the sync is not resumed on a node
// the log calls lost.
func TestARestartedSourceRunsNoPhaseThePlannerCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, kcfg := testenv.Events(t, ctx)
	cfg := kcfg
	cfg.TransactionalID = "executor-n1"
	e, err := New(Config{Node: "n1", Kafka: cfg, Heartbeat: time.Second, Fence: 4 * time.Second,
		Logger: slog.New(slog.DiscardHandler), PlainTransfer: true}, migratorFunc(func() { t.Error("the driver ran") }))
	if err != nil {
		t.Fatal(err)
	}
	defer e.prod.Close()
	e.base = t.Context()
	phase := func(seq int, name string, off int64) kafka.Record {
		d := events.MigrationPhaseDispatched{Migration: "m1", Instance: "vm1", Node: "n1", Seq: seq, Phase: name,
			Source: "n1", Target: "n2", Sync: 1}
		return kafka.Record{Offset: off, Event: events.New(d, events.WithProducer("planner"),
			events.WithReason(events.Reason{Actor: "planner", Why: "migrate vm1"}))}
	}
	if err := e.recoverMigrations([]kafka.Record{phase(1, events.PhaseSync, 0), phase(2, events.PhaseCancel, 1)}); err != nil {
		t.Fatal(err)
	}
	e.wg.Wait()
	ends := testenv.Read[events.MigrationPhaseEnded](t, ctx, kcfg, nil)
	if len(ends) != 1 || ends[0].Seq != 2 || ends[0].Status != events.JobCanceled || !strings.Contains(ends[0].Error, "declared this node lost") {
		t.Fatalf("phase ends %+v; want the cancel's alone, canceled, saying the node was declared lost", ends)
	}
}

// migratorFunc is a driver whose every call runs ran and fails.
type migratorFunc func()

func (f migratorFunc) Run(context.Context, Op, func(Progress)) (Result, error) {
	f()
	return Result{}, errors.New("not run in this test")
}

func (f migratorFunc) Phase(context.Context, MigrationPhase, func(Progress)) (PhaseResult, error) {
	f()
	return PhaseResult{}, errors.New("not run in this test")
}

func (f migratorFunc) Estimate(context.Context, MigrationPhase) (Estimate, error) {
	f()
	return Estimate{}, errors.New("not run in this test")
}
