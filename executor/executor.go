package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

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
	slots  *slots      // Concurrency opcodes at once, in dispatch order
	rv     *rendezvous // target sides of moves (receive.go)
	owed   *owed       // the checkpoint: what is owed since where (read.go)
	reader atomic.Pointer[kafka.Reader]

	mu        sync.Mutex
	base      context.Context         // Run's context; tasks derive theirs from it
	halt      context.CancelCauseFunc // ends base, and so Run (fenced.go)
	ended     map[opKey]bool
	cancelled map[opKey]string // reason, for opcodes told to stop
	tasks     map[opKey]*task  // queued or running
	wg        sync.WaitGroup

	mig migRuns // per-instance migration phases (migration.go)

	lease *Lease // renewed by heartbeats (lease.go)
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
		slots:     newSlots(cfg.Concurrency),
		rv:        newRendezvous(),
		owed:      newOwed(cfg.CheckpointLinger),
		ended:     map[opKey]bool{},
		cancelled: map[opKey]string{},
		tasks:     map[opKey]*task{},
		lease:     cfg.Lease,
	}, nil
}

// Run works until ctx is done or the log cannot be read, then stops every
// running opcode without ending it (the next start runs it again) and
// returns. It returns nil when ctx ended it.
//
// At start it ensures the topics and announces the node
// (Config.Announce); then it reads (read.go) the partition of
// drove.opcodes its node's name maps to, from its checkpoint, with
// drove.settings, up to where the log stood (no inventory: dispatches
// carry the facts); from what it read it learns what it owes: every
// opcode dispatched to this node that has not ended is started again,
// cancelled ones are ended as canceled, and so are receivers and
// migration phases.
// Then it follows the same partitions.
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
	e.base, e.halt = base, stop
	e.mu.Unlock()

	if !e.cfg.TopicsEnsured {
		if err := e.startStep(ctx, "ensuring the topics", func() error {
			return kafka.EnsureTopics(ctx, e.cfg.Kafka, e.cfg.Partitions, events.Topics()...)
		}); err != nil {
			return fmt.Errorf("executor: ensure topics: %w", err)
		}
	}
	if a := e.cfg.Announce; a != nil {
		env := events.New(*a, events.WithProducer(e.actor),
			events.WithReason(events.Reason{Actor: e.actor, Why: "executor started on node " + e.cfg.Node}))
		if err := e.append(ctx, events.TopicInventory, env); err != nil {
			return fmt.Errorf("executor: announce node: %w", err)
		}
	}
	e.wg.Add(1)
	go func() { defer e.wg.Done(); e.keepLease(base) }() // lease.go
	return e.read(ctx, base)
}

// recover takes the decisions the records read at start imply: ops are
// this node's partition of drove.opcodes from the checkpoint to where the
// log stood. Every record before the checkpoint is paid for (see owed),
// so what ops shows dispatched and not ended is all this node owes.
func (e *Executor) recover(ops []kafka.Record) error {
	type pending struct {
		env events.Envelope
		d   events.OpcodeDispatched
		off int64
	}
	var order []opKey
	dispatched := map[opKey]pending{}
	for _, rec := range ops {
		p, err := rec.Event.DecodePayload()
		if err != nil {
			return fmt.Errorf("executor: %s: %w", rec, err)
		}
		e.observe(rec, p, true)
		switch v := p.(type) {
		case events.OpcodeDispatched:
			if v.Node == e.cfg.Node {
				k := opKey{v.Request, v.Job, v.Index}
				if _, seen := dispatched[k]; !seen {
					order = append(order, k)
					dispatched[k] = pending{rec.Event, v, rec.Offset}
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
			e.submit(dispatched[k].env, dispatched[k].d, dispatched[k].off)
		}
	}
	e.resumeReceivers()
	return e.recoverMigrations(ops)
}

// observe folds the rendezvous' share of a drove.opcodes record, the
// events a source relayed to this node (TargetNotified) included: the
// dispatch, start and end of a move it is the target of, and a placement
// that leaves it without its replica.
func (e *Executor) observe(rec kafka.Record, p events.Payload, replay bool) {
	if n, ok := p.(events.TargetNotified); ok {
		inner, err := n.Event.DecodePayload()
		if err != nil || n.Node != e.cfg.Node {
			return // validated when decoded; another node's, sharing the partition
		}
		if v, ok := inner.(events.InstancePlaced); ok {
			if !replay {
				e.observePlaced(v)
			}
			return
		}
		e.observeOpcode(n.Event, inner, replay, rec.Offset)
		return
	}
	e.observeOpcode(rec.Event, p, replay, rec.Offset)
}

// handle applies one record read live. It never waits for an opcode to
// run: a running opcode must stay cancellable by a later record of the
// same partition.
func (e *Executor) handle(rec kafka.Record) error {
	if rec.Topic == events.TopicSettings {
		return e.applySettings(rec)
	}
	p, err := rec.Event.DecodePayload()
	if err != nil {
		return err
	}
	e.observe(rec, p, false)
	switch v := p.(type) {
	case events.OpcodeDispatched:
		if v.Node == e.cfg.Node {
			e.submit(rec.Event, v, rec.Offset)
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
		e.submitPhase(rec.Event, v, rec.Offset)
	case events.MigrationPhaseEnded:
		e.phaseEnded(v)
	}
	return nil
}

// submit starts a task for a dispatch at offset off unless the opcode
// already ended or is queued or running (a dispatch may be in the log
// twice); until it ends, the checkpoint stays at or before off.
func (e *Executor) submit(env events.Envelope, d events.OpcodeDispatched, off int64) {
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
	e.owed.owe(opcodeID(k), off, func() { e.forget(k) })
	if reason, ok := e.cancelled[k]; ok {
		cancel(&cancelRequest{reason})
	} else if !e.lease.admits(env.Time) { // lease.go
		e.log.Warn("not starting an opcode dispatched while the lease was down", "opcode", k, "dispatched", env.Time)
		e.cancelled[k] = errFenced.Error()
		cancel(&cancelRequest{errFenced.Error()})
	}
	e.m.queued.Inc()
	e.wg.Add(1)
	go e.runTask(t)
}

// forget drops what the executor remembers of an opcode long ended (see
// owed.owe).
func (e *Executor) forget(k opKey) {
	e.mu.Lock()
	delete(e.ended, k)
	delete(e.cancelled, k)
	e.mu.Unlock()
	e.rv.mu.Lock()
	delete(e.rv.addrs, k)
	e.rv.mu.Unlock()
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
		e.owed.pay(opcodeID(t.key))
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
