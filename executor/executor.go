package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// Executor is the agent on one node: it runs the opcodes dispatched to its
// node through a Driver and reports them on the log. Create it with New
// and call Run once.
type Executor struct {
	cfg    Config
	driver Driver
	log    *slog.Logger
	m      *metrics
	actor  string // "executor/<node>", the actor and producer of every event
	prod   *kafka.Producer
	inv    *inventory
	slots  *slots      // Concurrency opcodes at once, in dispatch order
	rv     *rendezvous // target sides of moves (receive.go)

	mu        sync.Mutex
	base      context.Context // Run's context; tasks derive theirs from it
	ended     map[opKey]bool
	cancelled map[opKey]string // reason, for opcodes told to stop
	tasks     map[opKey]*task  // queued or running
	wg        sync.WaitGroup

	mig migRuns // per-instance migration phases (migration.go)

	lease lease // renewed by heartbeats (lease.go)
}

// opKey identifies an opcode: (request, job, index).
type opKey struct {
	Request    string
	Job, Index int
}

func (k opKey) String() string { return fmt.Sprintf("%s/%d/%d", k.Request, k.Job, k.Index) }

// errShutdown is the cancel cause of tasks when Run returns: unlike a
// requested cancellation it ends nothing, so the next start runs the
// opcode again.
var errShutdown = errors.New("executor: shutting down")

// cancelRequest is the cancel cause of a task told to stop by
// OpcodeCancelled.
type cancelRequest struct{ reason string }

func (c *cancelRequest) Error() string { return "opcode cancelled: " + c.reason }
func (c *cancelRequest) Unwrap() error { return ErrCanceled }

// New checks cfg and returns an executor for cfg.Node driven by d. It does
// not contact Kafka; Run does.
func New(cfg Config, d Driver) (*Executor, error) {
	err := cfg.Validate()
	if d == nil {
		err = errors.Join(err, fmt.Errorf("%w: driver missing", ErrInvalidConfig))
	}
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := checkTransfer(cfg, d, cfg.Logger.With("node", cfg.Node)); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrInvalidConfig, err)
	}
	prod, err := kafka.NewProducer(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	return &Executor{
		cfg:       cfg,
		driver:    d,
		log:       cfg.Logger.With("node", cfg.Node),
		m:         m,
		actor:     "executor/" + cfg.Node,
		prod:      prod,
		inv:       newInventory(),
		slots:     newSlots(cfg.Concurrency),
		rv:        newRendezvous(),
		ended:     map[opKey]bool{},
		cancelled: map[opKey]string{},
		tasks:     map[opKey]*task{},
	}, nil
}

// Run works until ctx is done or the log cannot be read, then stops every
// running opcode without ending it (the next start runs it again) and
// returns. It returns nil when ctx ended it.
//
// At start it ensures the topics, announces the node (Config.Announce),
// folds drove.inventory, and reads drove.opcodes from offset zero to learn
// what it owes: every opcode dispatched to this node that has not ended is
// started again, cancelled ones are ended as canceled. Then it follows both
// topics as consumer group events.ExecutorGroup(node).
func (e *Executor) Run(ctx context.Context) error {
	defer e.prod.Close()
	base, stop := context.WithCancelCause(ctx)
	// Whatever ends Run, opcodes stop (without ending) before the producer
	// closes under them.
	defer func() {
		stop(errShutdown)
		e.wg.Wait()
	}()
	e.mu.Lock()
	e.base = base
	e.mu.Unlock()

	if err := kafka.EnsureTopics(ctx, e.cfg.Kafka, e.cfg.Partitions, events.Topics()...); err != nil {
		return fmt.Errorf("executor: ensure topics: %w", err)
	}
	if a := e.cfg.Announce; a != nil {
		env := events.New(*a, events.WithProducer(e.actor),
			events.WithReason(events.Reason{Actor: e.actor, Why: "executor started on node " + e.cfg.Node}))
		if err := e.prod.Append(ctx, events.TopicInventory, env); err != nil {
			return fmt.Errorf("executor: announce node: %w", err)
		}
	}
	if err := e.recover(ctx); err != nil {
		return err
	}
	e.wg.Add(1)
	go func() { defer e.wg.Done(); e.keepLease(base) }() // lease.go
	// A static member: an executor restarted after a crash takes its
	// place in its node's group at once (kafka.Config.InstanceID).
	kc := e.cfg.Kafka
	if kc.InstanceID == "" {
		kc.InstanceID = events.ExecutorGroup(e.cfg.Node)
	}
	cons, err := kafka.NewConsumer(kc, events.ExecutorGroup(e.cfg.Node),
		events.TopicOpcodes, events.TopicInventory, events.TopicSettings)
	if err != nil {
		return err
	}
	e.log.Info("executor running", "concurrency", e.cfg.Concurrency)
	if err := cons.Run(base, e.handle); err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	return nil
}

// recover folds the inventory and the opcode history from offset zero. The
// log, not the consumer offset, is the executor's memory of what it owes:
// see doc.go.
func (e *Executor) recover(ctx context.Context) error {
	inv, err := kafka.ReadAll(ctx, e.cfg.Kafka, events.TopicInventory)
	if err != nil {
		return fmt.Errorf("executor: read inventory: %w", err)
	}
	for _, rec := range inv {
		if err := e.inv.apply(rec); err != nil {
			return fmt.Errorf("executor: fold inventory %s: %w", rec, err)
		}
	}
	ops, err := kafka.ReadAll(ctx, e.cfg.Kafka, events.TopicOpcodes)
	if err != nil {
		return fmt.Errorf("executor: read opcodes: %w", err)
	}
	type pending struct {
		env events.Envelope
		d   events.OpcodeDispatched
	}
	var order []opKey
	dispatched := map[opKey]pending{}
	for _, rec := range ops {
		p, err := rec.Event.DecodePayload()
		if err != nil {
			return fmt.Errorf("executor: %s: %w", rec, err)
		}
		e.observeOpcode(rec.Event, p, true)
		switch v := p.(type) {
		case events.OpcodeDispatched:
			if v.Node == e.cfg.Node {
				k := opKey{v.Request, v.Job, v.Index}
				if _, seen := dispatched[k]; !seen {
					order = append(order, k)
					dispatched[k] = pending{rec.Event, v}
				}
			}
		case events.OpcodeEnded:
			if v.Node == e.cfg.Node {
				e.ended[opKey{v.Request, v.Job, v.Index}] = true
			}
		case events.OpcodeCancelled:
			if v.Node == e.cfg.Node {
				e.cancelled[opKey{v.Request, v.Job, v.Index}] = v.Reason
			}
		}
	}
	for _, k := range order {
		if !e.ended[k] {
			e.log.Info("resuming an opcode dispatched before this start", "opcode", k)
			e.submit(dispatched[k].env, dispatched[k].d)
		}
	}
	e.resumeReceivers()
	return e.recoverMigrations(ctx, ops)
}

// handle is the consumer's handler. It never waits for an opcode to run:
// a running opcode must stay cancellable by a later record of the same
// partition.
func (e *Executor) handle(_ context.Context, rec kafka.Record) error {
	if rec.Topic == events.TopicInventory {
		if p, err := rec.Event.DecodePayload(); err == nil {
			e.observeInventory(p)
		}
		return e.inv.apply(rec)
	}
	if rec.Topic == events.TopicSettings {
		return e.applySettings(rec)
	}
	p, err := rec.Event.DecodePayload()
	if err != nil {
		return err
	}
	e.observeOpcode(rec.Event, p, false)
	switch v := p.(type) {
	case events.OpcodeDispatched:
		if v.Node == e.cfg.Node {
			e.submit(rec.Event, v)
		}
	case events.OpcodeCancelled:
		if v.Node == e.cfg.Node {
			e.cancel(opKey{v.Request, v.Job, v.Index}, v.Reason)
		}
	case events.OpcodeEnded:
		if v.Node == e.cfg.Node {
			e.mu.Lock()
			e.ended[opKey{v.Request, v.Job, v.Index}] = true
			e.mu.Unlock()
		}
	case events.MigrationPhaseDispatched:
		e.submitPhase(rec.Event, v)
	case events.MigrationPhaseEnded:
		e.phaseEnded(v)
	}
	return nil
}

// submit starts a task for a dispatch unless the opcode already ended or
// is queued or running: dispatches are delivered at least once.
func (e *Executor) submit(env events.Envelope, d events.OpcodeDispatched) {
	k := opKey{d.Request, d.Job, d.Index}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended[k] || e.tasks[k] != nil {
		e.m.duplicates.Inc()
		e.log.Debug("dispatch already handled", "opcode", k, "event", env.ID)
		return
	}
	ctx, cancel := context.WithCancelCause(e.base)
	t := &task{key: k, dispatch: env, d: d, ctx: ctx, cancel: cancel, ticket: e.slots.enqueue()}
	e.tasks[k] = t
	if reason, ok := e.cancelled[k]; ok {
		cancel(&cancelRequest{reason})
	}
	e.m.queued.Inc()
	e.wg.Add(1)
	go e.runTask(t)
}

// cancel stops a queued or running opcode. One that already ended is left
// as it ended, as the protocol says.
func (e *Executor) cancel(k opKey, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended[k] {
		return
	}
	e.cancelled[k] = reason
	if t := e.tasks[k]; t != nil {
		e.log.Info("cancelling opcode", "opcode", k, "reason", reason)
		t.cancel(&cancelRequest{reason})
	}
}

// finish forgets a task; ended says whether its end events are in the log.
func (e *Executor) finish(t *task, ended bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.tasks, t.key)
	if ended {
		e.ended[t.key] = true
	}
}

// effect wraps payload as an effect of t's dispatch: caused by it, in its
// request, with the executor as actor.
func (e *Executor) effect(t *task, payload events.Payload, why string) events.Envelope {
	req := t.d.Request
	if req == "" {
		req = t.dispatch.CorrelationID
	}
	// The executor is the actor now, but whoever asked for the move stays
	// in the trail: an operator reading any event can still see who.
	if r := t.dispatch.Reason; r.Actor != "" {
		why = fmt.Sprintf("%s (asked by %s: %s)", why, r.Actor, r.Why)
	}
	return events.New(payload,
		events.CausedBy(t.dispatch),
		events.WithReason(events.Reason{Actor: e.actor, Why: why, RequestID: req}),
		events.WithProducer(e.actor))
}
