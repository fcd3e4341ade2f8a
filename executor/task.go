package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// task is one dispatched opcode, from the dispatch to its end events.
type task struct {
	key      opKey
	dispatch events.Envelope
	d        events.OpcodeDispatched
	ctx      context.Context
	cancel   context.CancelCauseFunc
	ticket   chan struct{} // closed when the task may run (see slots)
}

func (t *task) what() string {
	op := t.d.Opcode
	return fmt.Sprintf("%s of %s from %s to %s", ShortKind(op.OpID), op.Instance, op.From, op.To)
}

// outcome is how a task ended, before it is written.
type outcome struct {
	status  events.JobStatus
	err     error
	result  Result
	started bool // OpcodeStarted is in the log
	moves   moves
}

// endAppendTimeout bounds writing a finished opcode's end events after Run
// was asked to stop: the move happened, so recording it is worth a wait.
const endAppendTimeout = 15 * time.Second

// endContext is what an opcode's (or a phase's) end events are appended
// under. While the executor runs, they are retried for as long as it
// takes: the move happened, and an end given up on would leave the opcode
// owed with no next start to run it again (seen: a broker cut off from
// its peers for 20 s left a move unended for good). Once Run stops, they
// get endAppendTimeout more, and then the next start runs the opcode.
func (e *Executor) endContext(taskCtx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(taskCtx))
	stopping, done := e.base.Done(), make(chan struct{})
	go func() {
		select {
		case <-stopping:
		case <-done:
			return
		}
		select {
		case <-time.After(endAppendTimeout):
			cancel()
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel() }
}

// runTask takes the task through a slot, its start events, the driver's
// attempts and its end events. It writes no end events when the executor
// is shutting down: the opcode then stays owed and the next start runs it.
func (e *Executor) runTask(t *task) {
	defer e.wg.Done()
	log := e.log.With("opcode", t.key, "instance", t.d.Opcode.Instance)
	select {
	case <-t.ticket:
	case <-t.ctx.Done():
	}
	defer e.slots.leave(t.ticket)
	e.m.queued.Dec()
	if t.ctx.Err() != nil {
		if !e.requested(t) {
			e.finish(t, false)
			return
		}
		// Cancelled before it started: nothing ran, nothing to roll back.
		e.writeEnd(t, outcome{status: events.JobCanceled, err: context.Cause(t.ctx)}, nil, log)
		return
	}

	kind := ShortKind(t.d.Opcode.OpID)
	e.m.running.Inc()
	defer e.m.running.Dec()
	begin := time.Now()
	out, p := e.execute(t, log)
	if out.status == "" { // shutting down: leave it owed
		log.Info("opcode interrupted by shutdown; it runs again at the next start")
		if p != nil {
			p.close()
		}
		e.finish(t, false)
		return
	}
	e.writeEnd(t, out, p, log)
	e.m.ended.WithLabelValues(kind, string(out.status)).Inc()
	e.m.duration.WithLabelValues(kind, string(out.status)).Observe(time.Since(begin).Seconds())
}

// execute writes the start events and runs the driver, retrying transient
// faults. An outcome without status means the executor is shutting down.
func (e *Executor) execute(t *task, log *slog.Logger) (outcome, *pump) {
	op := t.d.Opcode
	base := events.Progress{Request: t.d.Request, Job: t.d.Job, Index: t.d.Index,
		Instance: op.Instance, Node: e.cfg.Node}
	p := newPump(base, e.cfg.ProgressInterval, e.sendProgress(context.WithoutCancel(t.ctx), t))

	start := []kafka.Message{
		{Topic: events.TopicOpcodes, Event: e.effect(t, events.OpcodeStarted{
			Request: t.d.Request, Job: t.d.Job, Index: t.d.Index, Node: e.cfg.Node}, "started "+t.what())},
		{Topic: events.TopicProgress, Event: e.effect(t, events.MoveStatusReported{
			Request: t.d.Request, Instance: op.Instance, Node: op.From, Status: events.StatusMigrationSource},
			op.From+" is the source of "+t.what())},
		{Topic: events.TopicProgress, Event: e.effect(t, events.MoveStatusReported{
			Request: t.d.Request, Instance: op.Instance, Node: op.To, Status: events.StatusMigrationDestination},
			op.To+" is the destination of "+t.what())},
	}
	start = append(start, e.targetNotice(op.To, t.dispatch)...)
	if err := e.appendHard(t.ctx, start); err != nil {
		return e.interrupted(t, outcome{}), p
	}
	e.m.started.WithLabelValues(ShortKind(op.OpID)).Inc()

	dop, mv, err := e.prepare(t)
	if err != nil {
		if t.ctx.Err() != nil {
			return e.interrupted(t, outcome{started: true}), p
		}
		return outcome{status: events.JobError, err: err, started: true}, p
	}
	out := outcome{started: true, moves: mv}
	var res Result
	err = e.retryTransient(t.ctx, p, log, func(n int) error {
		dop.Attempt = n
		var err error
		res, err = e.driver.Run(e.link(t.ctx, dop.To), dop, p.report)
		return err
	}, func() { e.m.retries.WithLabelValues(dop.ShortKind()).Inc() })
	switch {
	case err == nil:
		out.status, out.result = events.JobSuccess, res
		return out, p
	case t.ctx.Err() != nil:
		out.err = err
		return e.interrupted(t, out), p
	}
	out.status, out.err = events.JobError, err
	return out, p
}

// retryTransient runs a driver step through the configured backoff,
// trying again only after transient faults, and tells the watchers of p
// about each retry. counted, if not nil, is called once a retry.
func (e *Executor) retryTransient(ctx context.Context, p *pump, log interface{ Info(string, ...any) },
	try func(attempt int) error, counted func()) error {
	return e.cfg.Retry.policy().Do(ctx, IsTransient, try, func(next int, err error, wait time.Duration) {
		if counted != nil {
			counted()
		}
		msg := fmt.Sprintf("retrying (attempt %d/%d) after transient fault: %v", next, e.cfg.Retry.Attempts, err)
		log.Info(msg, "backoff", wait)
		p.notice(msg, err.Error())
	})
}

// interrupted turns a done task context into its outcome: canceled when
// OpcodeCancelled asked for it, no status (shutdown) otherwise.
func (e *Executor) interrupted(t *task, out outcome) outcome {
	if e.requested(t) {
		out.status = events.JobCanceled
		if out.err == nil || !errors.Is(out.err, ErrCanceled) {
			out.err = context.Cause(t.ctx)
		}
		return out
	}
	return outcome{}
}

func (e *Executor) requested(t *task) bool {
	var cr *cancelRequest
	return errors.As(context.Cause(t.ctx), &cr)
}

// prepare builds the driver's Op from the dispatch and the facts it
// carries.
func (e *Executor) prepare(t *task) (Op, moves, error) {
	op := t.d.Opcode
	f, err := factsOf(t.d.Facts, op.Instance, op.From, op.To)
	if err != nil {
		return Op{}, moves{}, err
	}
	if f.Primary != op.From {
		e.log.Warn("the dispatch's facts disagree with the opcode on the instance's primary; trusting the opcode",
			"opcode", t.key, "facts_primary", f.Primary, "opcode_from", op.From)
	}
	mv := planMoves(op, f)
	return Op{
		Request: t.d.Request, Job: t.d.Job, Index: t.d.Index,
		Kind: op.OpID, Mode: op.Mode, AllowFailover: op.AllowFailover,
		Instance: op.Instance, Size: f.Size, Storage: f.Storage, RunState: f.RunState,
		From: op.From, To: op.To, Primary: mv.prevPrimary, Secondary: mv.prevSecondary,
		Status:        e.reportStatus(t),
		AwaitReceiver: e.awaitReceiver(t.key),
	}, mv, nil
}

// appendHard appends msgs, retrying with backoff until it works or ctx is
// done: without its start or end events an opcode must not be considered
// run, so there is no giving up short of shutdown.
func (e *Executor) appendHard(ctx context.Context, msgs []kafka.Message) error {
	pol := e.cfg.Retry.policy()
	pol.Tries = 0
	err := pol.Do(ctx, func(err error) bool {
		// another executor took over this node, or we are closing
		return !errors.Is(err, kafka.ErrFenced) && !errors.Is(err, kafka.ErrClosed)
	}, func(int) error { return e.appendBatch(ctx, msgs...) },
		func(_ int, err error, wait time.Duration) {
			e.log.Warn("append failed; retrying", "err", err, "backoff", wait)
		})
	if err != nil && ctx.Err() != nil {
		return errors.Join(err, ctx.Err())
	}
	return err
}

// writeEnd appends the progress left (the pump's last reports) and the
// end events in one transaction: OpcodeEnded, End, the two final node
// statuses and, on success, InstancePlaced.
func (e *Executor) writeEnd(t *task, out outcome, p *pump, log *slog.Logger) {
	phase := events.PhaseBegin
	var msgs []kafka.Message
	if p != nil {
		for _, ev := range p.closeLeft() {
			msgs = append(msgs, kafka.Message{Topic: events.TopicProgress, Event: e.progressOf(t, ev)})
		}
		phase = p.phaseNow()
	}
	left := len(msgs)
	op := t.d.Opcode
	errText := ""
	if out.err != nil {
		errText = out.err.Error()
	}
	ended := events.OpcodeEnded{Request: t.d.Request, Job: t.d.Job, Index: t.d.Index,
		Node: e.cfg.Node, Status: out.status, Error: errText}
	end := events.End{Request: t.d.Request, Job: t.d.Job, Index: t.d.Index,
		Instance: op.Instance, Node: e.cfg.Node, Phase: phase, State: events.EndFailed}
	switch out.status {
	case events.JobSuccess:
		end.State = events.EndSuccessful
		end.Message = out.result.Message
		if end.Message == "" {
			end.Message = "done: " + t.what()
		}
	case events.JobCanceled:
		end.Message = "canceled: " + errText
	default:
		end.Message = "failed: " + errText
	}
	endedEnv := e.effect(t, ended, fmt.Sprintf("%s ended: %s", t.what(), out.status))
	msgs = append(msgs,
		kafka.Message{Topic: events.TopicOpcodes, Event: endedEnv},
		kafka.Message{Topic: events.TopicProgress, Event: e.effect(t, end, "end of "+t.what())})
	msgs = append(msgs, e.targetNotice(op.To, endedEnv)...)
	if out.started {
		from, to := finalStatuses(op.OpID, out.status == events.JobSuccess)
		msgs = append(msgs,
			kafka.Message{Topic: events.TopicProgress, Event: e.effect(t, events.MoveStatusReported{
				Request: t.d.Request, Instance: op.Instance, Node: op.From, Status: from}, "after "+t.what())},
			kafka.Message{Topic: events.TopicProgress, Event: e.effect(t, events.MoveStatusReported{
				Request: t.d.Request, Instance: op.Instance, Node: op.To, Status: to}, "after "+t.what())})
	}
	if out.status == events.JobSuccess {
		placed := out.moves.placed(t.d.Request, op.Instance)
		placedEnv := e.effect(t, placed, "placed by "+t.what())
		msgs = append(msgs, kafka.Message{Topic: events.TopicInventory, Event: placedEnv})
		if dropsReplica(placed) { // its old secondary reads only its own partition
			msgs = append(msgs, e.targetNotice(placed.PreviousSecondary, placedEnv)...)
		}
	}
	// The move is over whatever happens to Run now; record it.
	ctx, cancel := e.endContext(t.ctx)
	defer cancel()
	if err := e.appendHard(ctx, msgs); err != nil {
		log.Error("end events not appended; the opcode runs again at the next start", "err", err)
		e.finish(t, false)
		return
	}
	if left > 0 {
		e.m.progress.Add(float64(left))
	}
	log.Info("opcode ended", "status", out.status, "err", errText)
	e.finish(t, true)
}

// progressAppendTimeout bounds one progress append, so a stalled broker
// delays a move's end by seconds, not forever.
const progressAppendTimeout = 5 * time.Second

// reportStatus is the driver's Op.Status: a node's status in the middle of
// a move (a post-copy source "paused"), appended at once rather than
// through the pump — it is rare and a view must not miss it.
func (e *Executor) reportStatus(t *task) func(node string, status events.NodeMoveStatus) {
	return func(node string, status events.NodeMoveStatus) {
		env := e.effect(t, events.MoveStatusReported{Request: t.d.Request, Instance: t.d.Opcode.Instance,
			Node: node, Status: status}, fmt.Sprintf("%s reports %s during %s", node, status, t.what()))
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), progressAppendTimeout)
		defer cancel()
		if err := e.append(ctx, events.TopicProgress, env); err != nil {
			e.log.Warn("move status not appended", "opcode", t.key, "node", node, "status", status, "err", err)
		}
	}
}

// progressOf is a report of t as its event: what the pump sends, and
// what is left of it at the end (writeEnd).
func (e *Executor) progressOf(t *task, ev events.Progress) events.Envelope {
	return e.effect(t, ev, "progress of "+t.what())
}

// sendProgress is the pump's send: a failed progress append is logged, not
// fatal, because progress is advice to watchers; the end events are what
// the protocol depends on.
func (e *Executor) sendProgress(ctx context.Context, t *task) func(events.Progress) {
	return func(ev events.Progress) {
		env := e.progressOf(t, ev)
		ctx, cancel := context.WithTimeout(ctx, progressAppendTimeout)
		defer cancel()
		if err := e.append(ctx, events.TopicProgress, env); err != nil {
			e.log.Warn("progress event not appended", "opcode", t.key, "err", err)
			return
		}
		e.m.progress.Inc()
	}
}
