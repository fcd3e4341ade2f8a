package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/transfer"
)

// Per-instance migrations (RFD 34), one phase at a time. The planner
// service's migration coordinator dispatches each phase to the source
// node (MigrationPhaseDispatched); the executor there runs it through the
// driver's Migrator, reports progress (Progress with Request = the
// migration id, Job 0, Index = the phase's seq), retries transient faults
// as it does for opcodes, and ends it with MigrationPhaseEnded and End in
// one transaction.
//
// A migration runs one phase at a time on its node. A dispatch with a
// higher seq for the same migration supersedes the phase running (an
// abort, a pause, a cancel for a node the planner declared lost, or a
// re-dispatch after the coordinator saw no progress): the old
// phase's context is cancelled, it ends canceled, and the new one starts
// once the old one has returned, so the driver never runs two phases of
// one migration at once. A dispatch with a lower seq than one already seen
// is stale and ignored.
//
// The send rate cap follows drove.settings while a phase runs: the driver
// reads it through MigrationPhase.CurrentRate.

// errSuperseded is the cancel cause of a phase a newer phase replaced;
// errPaused of a sync a pause replaced.
var (
	errSuperseded = fmt.Errorf("%w: superseded by a newer phase of the migration", ErrCanceled)
	errPaused     = fmt.Errorf("%w: paused", errSuperseded)
	// errLostNode ends a cancel phase (events.PhaseCancel): the planner
	// declared this node lost while a phase was owed here.
	errLostNode = fmt.Errorf("%w: the planner declared this node lost while the phase was owed here", ErrCanceled)
)

type migKey struct {
	Migration string
	Seq       int
}

func (k migKey) String() string { return fmt.Sprintf("%s#%d", k.Migration, k.Seq) }

// migRuns is the executor's migration bookkeeping; its zero value is ready.
type migRuns struct {
	mu       sync.Mutex
	ended    map[migKey]bool
	latest   map[string]int      // migration → highest seq dispatched here
	tasks    map[string]*migTask // migration → the phase queued or running
	settings *events.SettingsChanged
}

func (r *migRuns) init() {
	if r.ended == nil {
		r.ended, r.latest, r.tasks = map[migKey]bool{}, map[string]int{}, map[string]*migTask{}
	}
}

type migTask struct {
	key      migKey
	dispatch events.Envelope
	d        events.MigrationPhaseDispatched
	ctx      context.Context
	cancel   context.CancelCauseFunc
	prev     *migTask      // the superseded phase, to wait for
	done     chan struct{} // closed when the task returns
}

// recoverMigrations finds, in the opcodes topic read at start, the phases
// dispatched to this node that have not ended, and runs the latest of
// each migration again; it also loads the settings in force.
func (e *Executor) recoverMigrations(ops []kafka.Record) error {
	type pending struct {
		env events.Envelope
		d   events.MigrationPhaseDispatched
		off int64
	}
	latest := map[string]pending{}
	var order []string
	ended := map[migKey]bool{}
	for _, rec := range ops {
		p, err := rec.Event.DecodePayload()
		if err != nil {
			return fmt.Errorf("executor: %s: %w", rec, err)
		}
		switch v := p.(type) {
		case events.MigrationPhaseDispatched:
			if v.Node != e.cfg.Node {
				continue
			}
			old, seen := latest[v.Migration]
			if !seen {
				order = append(order, v.Migration)
			}
			if !seen || v.Seq > old.d.Seq {
				latest[v.Migration] = pending{rec.Event, v, rec.Offset}
			}
		case events.MigrationPhaseEnded:
			if v.Node == e.cfg.Node {
				ended[migKey{v.Migration, v.Seq}] = true
			}
		}
	}
	e.mig.mu.Lock()
	e.mig.init()
	for k := range ended {
		e.mig.ended[k] = true
	}
	e.mig.mu.Unlock()
	for _, id := range order {
		p := latest[id]
		if !ended[migKey{id, p.d.Seq}] {
			e.log.Info("resuming a migration phase dispatched before this start", "migration", id, "seq", p.d.Seq, "phase", p.d.Phase)
		}
		e.submitPhase(p.env, p.d, p.off)
	}
	return nil
}

// applySettings folds one drove.settings record: the last one wins.
func (e *Executor) applySettings(rec kafka.Record) error {
	s, err := events.As[events.SettingsChanged](rec.Event)
	if err != nil {
		return err
	}
	e.mig.mu.Lock()
	e.mig.settings = &s
	e.mig.mu.Unlock()
	return nil
}

// phaseEnded notes a phase's end read from the log.
func (e *Executor) phaseEnded(v events.MigrationPhaseEnded) {
	if v.Node != e.cfg.Node {
		return
	}
	e.mig.mu.Lock()
	e.mig.init()
	e.mig.ended[migKey{v.Migration, v.Seq}] = true
	e.mig.mu.Unlock()
}

// submitPhase starts a phase dispatched at offset off unless it ended,
// runs, or is stale; until it ends, the checkpoint stays at or before off.
func (e *Executor) submitPhase(env events.Envelope, d events.MigrationPhaseDispatched, off int64) {
	if d.Node != e.cfg.Node {
		return
	}
	k := migKey{d.Migration, d.Seq}
	e.mig.mu.Lock()
	defer e.mig.mu.Unlock()
	e.mig.init()
	if latest, ok := e.mig.latest[d.Migration]; ok && d.Seq < latest {
		return // stale: a newer phase was dispatched
	}
	if e.mig.ended[k] {
		e.mig.latest[d.Migration] = d.Seq
		return
	}
	prev := e.mig.tasks[d.Migration]
	if prev != nil && prev.key == k {
		e.m.duplicates.Inc()
		return
	}
	e.mu.Lock()
	base := e.base
	e.mu.Unlock()
	ctx, cancel := context.WithCancelCause(base)
	t := &migTask{key: k, dispatch: env, d: d, ctx: ctx, cancel: cancel, prev: prev, done: make(chan struct{})}
	if prev != nil {
		e.log.Info("phase superseded", "migration", d.Migration, "old", prev.key.Seq, "new", d.Seq)
		cause := errSuperseded
		if d.Phase == events.PhasePause {
			cause = errPaused
		}
		prev.cancel(cause)
	}
	if !e.lease.admits(env.Time) { // lease.go
		e.log.Warn("not starting a phase dispatched while the lease was down", "migration", d.Migration, "seq", d.Seq, "phase", d.Phase, "dispatched", env.Time)
		cancel(errFencedPhase)
	}
	e.mig.latest[d.Migration] = d.Seq
	e.mig.tasks[d.Migration] = t
	e.owed.owe(phaseID(k), off, func() {
		e.mig.mu.Lock()
		delete(e.mig.ended, k)
		if e.mig.latest[k.Migration] == k.Seq && e.mig.tasks[k.Migration] == nil {
			delete(e.mig.latest, k.Migration)
		}
		e.mig.mu.Unlock()
	})
	e.wg.Add(1)
	go e.runPhase(t)
}

// currentRate is the send cap in bytes per second for d now: the latest
// settings if the executor has read any, else what the dispatch said.
func (e *Executor) currentRate(d events.MigrationPhaseDispatched) int64 {
	e.mig.mu.Lock()
	mbps := d.SendMbps
	if s := e.mig.settings; s != nil {
		mbps = s.SendMbpsLimit
	}
	e.mig.mu.Unlock()
	return transfer.MbitPerSecond(mbps)
}

func (t *migTask) what() string {
	return fmt.Sprintf("%s phase (seq %d) of migration %s of %s", t.d.Phase, t.d.Seq, t.d.Migration, t.d.Instance)
}

// runPhase runs one phase through the driver and writes its end. On
// shutdown it writes nothing: the phase stays owed and runs at next start.
func (e *Executor) runPhase(t *migTask) {
	defer e.wg.Done()
	defer close(t.done)
	log := e.log.With("migration", t.d.Migration, "seq", t.d.Seq, "phase", t.d.Phase)
	if t.prev != nil {
		<-t.prev.done // the driver runs one phase of a migration at a time
	}
	if t.d.Phase == events.PhaseCancel {
		// Nothing runs: the phase it superseded is never resumed here.
		e.writePhaseEnd(t, events.JobCanceled, PhaseResult{}, errLostNode, nil, log)
		return
	}
	if err := e.notifyTarget(t.ctx, t.d.Target, t.dispatch); err != nil {
		// Superseded or fenced (the lease fell while the notice waited
		// for a slow log), not shut down: the executor goes on, so no
		// next start would run the phase, and the migration would wait
		// for it forever. It ends canceled, as a phase that had begun.
		if status := e.phaseInterrupted(t); status != "" {
			e.writePhaseEnd(t, status, PhaseResult{}, context.Cause(t.ctx), nil, log)
			return
		}
		log.Info("phase interrupted before it began; it runs again at the next start", "err", err)
		e.finishPhase(t, false)
		return
	}
	base := events.Progress{Request: t.d.Migration, Job: 0, Index: t.d.Seq, Instance: t.d.Instance, Node: e.cfg.Node}
	p := newPump(base, e.cfg.ProgressInterval, e.sendPhaseProgress(context.WithoutCancel(t.ctx), t))
	status, res, err := e.executePhase(t, p, log)
	if status == "" {
		p.close()
		log.Info("phase interrupted by shutdown; it runs again at the next start")
		e.finishPhase(t, false)
		return
	}
	e.writePhaseEnd(t, status, res, err, p.closeLeft(), log)
}

// executePhase calls the driver, retrying transient faults; an empty
// status means shutdown.
func (e *Executor) executePhase(t *migTask, p *pump, log interface{ Info(string, ...any) }) (events.JobStatus, PhaseResult, error) {
	mg, ok := e.driver.(Migrator)
	if !ok {
		return events.JobError, PhaseResult{}, Fatalf("driver %T does not run per-instance migrations", e.driver)
	}
	if t.ctx.Err() != nil {
		return e.phaseInterrupted(t), PhaseResult{}, context.Cause(t.ctx)
	}
	if t.d.Phase == events.PhasePause {
		// The sync it superseded has returned (tasks of one migration
		// run one at a time): the send has stopped.
		return events.JobSuccess, PhaseResult{Message: fmt.Sprintf("sync %d stopped", t.d.Sync)}, nil
	}
	f, err := factsOf(t.d.Facts, t.d.Instance)
	if err != nil {
		return events.JobError, PhaseResult{}, err
	}
	mp := MigrationPhase{
		Migration: t.d.Migration, Seq: t.d.Seq, Phase: t.d.Phase, Sync: t.d.Sync, Instance: t.d.Instance,
		Size: f.Size, Storage: f.Storage, RunState: f.RunState,
		Source: t.d.Source, Target: t.d.Target,
		SendBytesPerSecond: e.currentRate(t.d),
		CurrentRate:        func() int64 { return e.currentRate(t.d) },
		MaxDowntime:        time.Duration(t.d.MaxDowntimeMS) * time.Millisecond,
		AwaitReceiver:      e.awaitReceiver(opKey{t.d.Migration, 0, t.d.Seq}), // migration_receive.go
		Status:             e.reportPhaseStatus(t),
	}
	if t.d.Phase == events.PhaseSwitch {
		if err := e.mayAct(t.what()); err != nil { // lease.go: the fence
			return events.JobError, PhaseResult{}, err
		}
	}
	var res PhaseResult
	err = e.retryTransient(t.ctx, p, log, func(int) error {
		var err error
		res, err = mg.Phase(e.link(t.ctx, e.otherEnd(mp)), mp, p.report)
		return err
	}, nil)
	switch {
	case err == nil:
		return events.JobSuccess, res, nil
	case t.ctx.Err() != nil:
		return e.phaseInterrupted(t), PhaseResult{}, err
	}
	return events.JobError, PhaseResult{}, err
}

// phaseInterrupted: canceled when superseded, no status (shutdown) else.
func (e *Executor) phaseInterrupted(t *migTask) events.JobStatus {
	if errors.Is(context.Cause(t.ctx), errSuperseded) {
		return events.JobCanceled
	}
	return ""
}

func (e *Executor) finishPhase(t *migTask, ended bool) {
	e.mig.mu.Lock()
	defer e.mig.mu.Unlock()
	if e.mig.tasks[t.d.Migration] == t {
		delete(e.mig.tasks, t.d.Migration)
	}
	if ended {
		e.mig.ended[t.key] = true
		e.owed.pay(phaseID(t.key))
	}
}

// phaseEffect wraps payload as an effect of t's dispatch.
func (e *Executor) phaseEffect(t *migTask, payload events.Payload, why string) events.Envelope {
	if r := t.dispatch.Reason; r.Actor != "" {
		why = fmt.Sprintf("%s (asked by %s)", why, r.Actor)
	}
	return events.New(payload, events.CausedBy(t.dispatch),
		events.WithReason(events.Reason{Actor: e.actor, Why: why, RequestID: t.d.Migration}),
		events.WithProducer(e.actor))
}

// reportPhaseStatus is MigrationPhase.Status: appended at once, as an
// opcode's Op.Status is, keyed by the migration as its progress is.
func (e *Executor) reportPhaseStatus(t *migTask) func(node string, status events.NodeMoveStatus) {
	return func(node string, status events.NodeMoveStatus) {
		env := e.phaseEffect(t, events.MoveStatusReported{Request: t.d.Migration, Instance: t.d.Instance,
			Node: node, Status: status}, fmt.Sprintf("%s reports %s during the %s", node, status, t.what()))
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), progressAppendTimeout)
		defer cancel()
		if err := e.append(ctx, events.TopicProgress, env); err != nil {
			e.log.Warn("move status not appended", "migration", t.d.Migration, "node", node, "status", status, "err", err)
		}
	}
}

func (e *Executor) sendPhaseProgress(ctx context.Context, t *migTask) func(events.Progress) {
	return func(ev events.Progress) {
		env := e.phaseProgressOf(t, ev)
		ctx, cancel := context.WithTimeout(ctx, progressAppendTimeout)
		defer cancel()
		if err := e.append(ctx, events.TopicProgress, env); err != nil {
			e.log.Warn("progress event not appended", "migration", t.d.Migration, "err", err)
			return
		}
		e.m.progress.Inc()
	}
}

// phaseProgressOf is a report of t as its event: what the pump sends, and
// what is left of it at the end (writePhaseEnd).
func (e *Executor) phaseProgressOf(t *migTask, ev events.Progress) events.Envelope {
	if ev.Phase == events.PhaseBegin && t.d.Phase != events.PhaseBegin {
		ev.Phase = t.d.Phase // the pump's default before any report
	}
	return e.phaseEffect(t, ev, "progress of the "+t.what())
}

// writePhaseEnd appends the progress left (the pump's last reports),
// MigrationPhaseEnded and End in one transaction.
func (e *Executor) writePhaseEnd(t *migTask, status events.JobStatus, res PhaseResult, err error, left []events.Progress, log interface {
	Info(string, ...any)
	Error(string, ...any)
}) {
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	ended := events.MigrationPhaseEnded{Migration: t.d.Migration, Instance: t.d.Instance, Node: e.cfg.Node,
		Seq: t.d.Seq, Phase: t.d.Phase, Status: status, Bytes: res.Bytes,
		DowntimeMS: res.Downtime.Milliseconds(), WorkloadDowntimeMS: res.WorkloadDowntime.Milliseconds(),
		OverheadMS: res.Overhead.Milliseconds(), AtSwitchPoint: res.AtSwitchPoint, Error: errText}
	end := events.End{Request: t.d.Migration, Job: 0, Index: t.d.Seq, Instance: t.d.Instance, Node: e.cfg.Node,
		Phase: t.d.Phase, State: events.EndSuccessful, Message: res.Message}
	switch status {
	case events.JobSuccess:
		if end.Message == "" {
			end.Message = "done: " + t.what()
		}
	case events.JobCanceled:
		end.State, end.Message = events.EndFailed, "canceled: "+errText
	default:
		end.State, end.Message = events.EndFailed, "failed: "+errText
	}
	var msgs []kafka.Message
	for _, ev := range left {
		msgs = append(msgs, kafka.Message{Topic: events.TopicProgress, Event: e.phaseProgressOf(t, ev)})
	}
	endedEnv := e.phaseEffect(t, ended, fmt.Sprintf("%s ended: %s", t.what(), status))
	msgs = append(msgs, kafka.Message{Topic: events.TopicOpcodes, Event: endedEnv})
	msgs = append(msgs, e.targetNotice(t.d.Target, endedEnv)...)
	// A pause and the sync it stopped have no End of their own: the
	// coordinator writes the one RFD 34 end, "paused", when the pause ends.
	if t.d.Phase != events.PhasePause && !errors.Is(context.Cause(t.ctx), errPaused) {
		msgs = append(msgs, kafka.Message{Topic: events.TopicProgress, Event: e.phaseEffect(t, end, "end of the "+t.what())})
	}
	ctx, cancel := e.endContext(t.ctx)
	defer cancel()
	if err := e.appendHard(ctx, msgs); err != nil {
		log.Error("phase end not appended; the phase runs again at the next start", "err", err)
		e.finishPhase(t, false)
		return
	}
	if len(left) > 0 {
		e.m.progress.Add(float64(len(left)))
	}
	log.Info("phase ended", "status", status, "err", errText)
	e.finishPhase(t, true)
}
