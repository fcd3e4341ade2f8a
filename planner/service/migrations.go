package service

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner"
)

// The migration coordinator: per-instance migrations (Triton RFD 34), run
// phase by phase on the source node's executor. Like the request passes
// (decide.go) it is level-triggered: after every poll and every tick a
// pass looks at each migration and takes what decisions its state calls
// for now — commands not yet answered, the end of its latest phase, and
// its timers (a queued migration's free slot, a scheduled switch, the
// finalize grace period, the progress timeout). Every decision writes the
// migration's whole record (MigrationStateChanged), caused by what it
// answers, so the record's causation is how a restart knows a command or
// a phase end was already handled.

// decideMigrations runs a pass over every migration, oldest first, so a
// freed slot goes to the oldest queued migration. Each migration's
// decisions are one transaction.
func (l *loop) decideMigrations(ctx context.Context) error {
	ms := l.st.migs
	for _, id := range ms.sorted() {
		p := &mpass{svc: l.svc, st: l.st, ms: ms, m: ms.byID[id], now: ms.now()}
		p.run()
		if len(p.msgs) == 0 {
			continue
		}
		if err := l.append(ctx, p.msgs); err != nil {
			return err
		}
		rec := ms.byID[id].rec
		l.svc.log.Info("migration decided", "migration", id, "events", len(p.msgs),
			"state", rec.State, "phase", rec.Phase, "message", rec.Message)
	}
	return nil
}

// mpass is one migration's decisions of one pass.
type mpass struct {
	svc  *Service
	st   *state
	ms   *migrations
	m    *mig
	now  time.Time
	msgs []kafka.Message
}

// emit appends one decision, caused by cause, and applies it at once.
func (p *mpass) emit(payload events.Payload, why string, cause events.Envelope) {
	opts := []events.Option{events.WithProducer(p.svc.cfg.Producer)}
	if cause.ID != "" {
		opts = append(opts, events.CausedBy(cause))
	}
	origin := ""
	if c := p.m.created; c != nil {
		origin = fmt.Sprintf("; migration %s asked by %s: %s", p.m.id, c.Reason.Actor, c.Reason.Why)
	}
	opts = append(opts, events.WithReason(events.Reason{Actor: "planner", Why: why + origin, RequestID: p.m.id}))
	env := events.New(payload, opts...)
	topic, _ := events.TopicOf(env.Type) // the package's own types: always known
	p.msgs = append(p.msgs, kafka.Message{Topic: topic, Event: env})
	p.st.apply(env, payload, unread(env))
}

// record writes r as the migration's record.
func (p *mpass) record(r events.MigrationStateChanged, cause events.Envelope) {
	why := fmt.Sprintf("migration %s of %s: %s, phase %s", r.Migration, r.Instance, r.State, r.Phase)
	if r.Message != "" {
		why += ": " + r.Message
	}
	p.emit(r, why, cause)
}

func (p *mpass) settings() events.SettingsChanged { return p.ms.settings }

// run takes every decision the migration needs now. The latest phase's
// end goes first: a command is judged against the state that end leaves
// (a pause right after a sync ended applies to the next sync).
func (p *mpass) run() {
	m := p.m
	if m.rec != nil {
		if ph, _ := m.latest(); ph != nil && ph.end != nil && !p.ms.handled[ph.endEnv.ID] {
			p.ended(ph)
		}
	}
	for _, c := range m.commands {
		if !p.ms.handled[c.ID] {
			p.command(c)
		}
	}
	if m.rec != nil {
		p.timers()
	}
}

// ---- commands

func (p *mpass) command(c events.Envelope) {
	a, err := events.As[events.MigrationActionRequested](c)
	if err != nil {
		p.ms.handled[c.ID] = true // Decode checked it; nothing to answer
		return
	}
	m := p.m
	if m.rec == nil {
		switch a.Action {
		case events.ActionBegin, events.ActionAutomatic, events.ActionSchedule:
			p.create(c, a)
		default:
			// No such migration: the gateway answers 404 before it
			// appends anything, so nothing is recorded. Remembered in
			// memory only, so a restart looks at it again.
			p.svc.log.Warn("command for an unknown migration ignored", "migration", a.Migration, "action", a.Action)
			p.ms.handled[c.ID] = true
		}
		return
	}
	r := *m.rec
	r.Error, r.ErrorDetail = "", ""
	var reason string
	switch a.Action {
	case events.ActionBegin:
		reason = "the migration has already begun"
	case events.ActionSync:
		reason = p.step(&r, c, events.PhaseSync)
	case events.ActionSwitch:
		reason = p.step(&r, c, events.PhaseSwitch)
	case events.ActionAutomatic:
		reason = p.automatic(&r, c)
	case events.ActionPause:
		reason = p.pause(&r, c)
	case events.ActionAbort:
		reason = p.abort(&r, c)
	case events.ActionRollback:
		reason = p.rollback(&r, c)
	case events.ActionFinalize:
		reason = p.finalize(&r, c, "finalize asked for")
	case events.ActionSchedule:
		reason = p.reschedule(&r, c, a)
	}
	if reason != "" {
		r = *m.rec // a refusal changes nothing but the message
		r.Message = fmt.Sprintf("%s refused: %s", a.Action, reason)
		p.record(r, c)
	}
}

// create answers the command that names a new migration: refuse it, queue
// it, or begin it.
func (p *mpass) create(c events.Envelope, a events.MigrationActionRequested) {
	inv := p.st.inv
	r := events.MigrationStateChanged{
		Migration: a.Migration, Instance: a.Instance, Account: a.Account, Role: a.Role,
		Automatic: a.Action != events.ActionBegin, ScheduledAt: a.ScheduledAt,
		State: events.MigrationRunning, Phase: events.PhaseBegin, Source: "unknown",
	}
	in := inv.instances[a.Instance]
	refuse := func(why string) {
		r.State, r.Error = events.MigrationFailed, why
		r.Message = string(a.Action) + " refused: " + why
		p.record(r, c)
	}
	if in == nil {
		refuse(fmt.Sprintf("unknown instance %q", a.Instance))
		return
	}
	r.Source, r.PriorRunState = in.PrimaryNode, in.RunState
	if other := p.ms.activeOn(a.Instance); other != nil {
		refuse(fmt.Sprintf("instance %s is already migrating: migration %s (%s)", a.Instance, other.id, other.rec.State))
		return
	}
	if req, ok := p.st.busyInstances()[a.Instance]; ok {
		refuse(fmt.Sprintf("instance %s is being moved by request %s", a.Instance, req))
		return
	}
	switch planner.StorageKind(in.Storage).Mirroring() {
	case planner.CopiedOnMove, planner.MirroredExternally:
	case planner.MirroredInternally:
		refuse(fmt.Sprintf("storage %s is mirrored to a secondary: move it with an evacuation instead", in.Storage))
		return
	default:
		refuse(fmt.Sprintf("storage %s cannot be sent to another node", in.Storage))
		return
	}
	target, why := p.pickTarget(in, a.Target)
	if target == "" {
		refuse("no target: " + why)
		return
	}
	r.Target = target
	if used, limit := p.ms.slotsUsed(r.Source), p.settings().MaxRunningMigrationsPerNode; used >= limit {
		r.State = events.MigrationQueued
		r.Message = fmt.Sprintf("queued: %d migrations already run from %s (limit %d)", used, r.Source, limit)
		p.record(r, c)
		return
	}
	p.start(r, c)
}

// pickTarget validates the target asked for, or asks the planner for the
// best node of the instance's group: a node evacuation of the source, in
// primary-only mode, of this instance alone.
func (p *mpass) pickTarget(in *events.InstanceDeclared, want string) (string, string) {
	inv := p.st.inv
	if want != "" {
		n := inv.nodes[want]
		mem, disk := int64(0), int64(0)
		if n != nil {
			mem, disk = inv.freeOf(want)
		}
		switch {
		case n == nil:
			return "", fmt.Sprintf("unknown node %q", want)
		case want == in.PrimaryNode:
			return "", fmt.Sprintf("%s is the instance's own node", want)
		case n.Offline || n.Drained || !n.VMCapable:
			return "", fmt.Sprintf("node %s is offline, drained or not VM capable", want)
		case in.RunState == events.RunRunning && mem < in.Size.MemoryMiB:
			return "", fmt.Sprintf("node %s has %d MiB of memory free, the instance needs %d", want, mem, in.Size.MemoryMiB)
		case usesLocalDisk(in.Storage) && disk < diskTotal(in.Size):
			return "", fmt.Sprintf("node %s has %d MiB of disk free, the instance needs %d", want, disk, diskTotal(in.Size))
		}
		// The planner's own rules too: policy ratios, migration tags.
		if why, err := planner.CheckTarget(inv.cluster(), in.Name, want, p.svc.cfg.Options); err != nil || why != "" {
			if err != nil {
				why = err.Error()
			}
			return "", why
		}
		return want, ""
	}
	req := planner.Request{Kind: planner.NodeEvacuate, Mode: planner.PrimaryOnly,
		Instances: []string{in.Name}, EvacuatedNodes: []string{in.PrimaryNode}}
	plan, err := planner.Compute(inv.cluster(), req, p.svc.cfg.Options)
	if err != nil {
		return "", err.Error()
	}
	for _, f := range plan.Failed {
		return "", f.Reason
	}
	for _, mv := range plan.Moved {
		if mv.Instance == in.Name && len(mv.Nodes) > 0 {
			return mv.Nodes[0], ""
		}
	}
	return "", "the planner found no node"
}

// start begins a migration: reserve the target, mark it migrating.
func (p *mpass) start(r events.MigrationStateChanged, cause events.Envelope) {
	r.State, r.Phase = events.MigrationRunning, events.PhaseBegin
	r.Message = fmt.Sprintf("begin: reserving %s on %s", r.Instance, r.Target)
	p.dispatch(&r, events.PhaseBegin, 0, cause)
}

// dispatch sends phase to the source node's executor and records r.
func (p *mpass) dispatch(r *events.MigrationStateChanged, phase string, sync int, cause events.Envelope) {
	if p.sourceGone(r, phase+" cannot run") {
		p.record(*r, cause)
		return
	}
	_, seq := p.m.latest()
	seq++
	p.emit(events.MigrationPhaseDispatched{
		Migration: r.Migration, Instance: r.Instance, Node: r.Source, Seq: seq, Phase: phase,
		Source: r.Source, Target: r.Target, Sync: sync, SendMbps: p.settings().SendMbpsLimit,
	}, fmt.Sprintf("dispatch %s (phase %d) of migration %s to %s", phase, seq, r.Migration, r.Source), cause)
	r.Phase = phase
	p.record(*r, cause)
}

// sourceGone fails r when its source node is offline: every phase runs
// there, and only an operator can bring it back.
func (p *mpass) sourceGone(r *events.MigrationStateChanged, what string) bool {
	n := p.st.inv.nodes[r.Source]
	if n == nil || !n.Offline {
		return false
	}
	r.State = events.MigrationFailed
	r.Error = fmt.Sprintf("source node %s is offline: %s", r.Source, what)
	r.ErrorDetail = fmt.Sprintf("operator action needed: bring %s back or recover %s from it; "+
		"the instance's data is on %s and the target %s holds a partial copy", r.Source, r.Instance, r.Source, r.Target)
	return true
}

// blocked says why the next phase cannot be asked for now ("" if it can).
func (p *mpass) blocked(r *events.MigrationStateChanged) string {
	switch {
	case r.Switched:
		return "the switch has committed"
	case r.State == events.MigrationQueued:
		return "it is queued, waiting for a free slot on " + r.Source
	case r.State == events.MigrationScheduled:
		return fmt.Sprintf("it is scheduled to switch at %s; reschedule or abort it", r.ScheduledAt.UTC().Format(time.RFC3339))
	case r.State != events.MigrationPaused && r.State != events.MigrationRunning:
		return "the migration is " + string(r.State)
	}
	if ph := p.m.running(); ph != nil {
		return fmt.Sprintf("phase %s is still running", ph.d.Phase)
	}
	if !p.began() {
		return "begin has not completed"
	}
	return ""
}

func (p *mpass) began() bool {
	for _, ph := range p.m.phases {
		if ph.d != nil && ph.d.Phase == events.PhaseBegin && ph.end != nil && ph.end.Status == events.JobSuccess {
			return true
		}
	}
	return false
}

// step runs one on-demand phase (sync or switch), in order. A paused
// migration resumes this way and keeps its mode.
func (p *mpass) step(r *events.MigrationStateChanged, c events.Envelope, phase string) string {
	if why := p.blocked(r); why != "" {
		return why
	}
	syncs := len(p.m.syncSizes())
	if phase == events.PhaseSwitch && syncs == 0 {
		return "switch before any sync: run sync first"
	}
	r.State = events.MigrationRunning
	if phase == events.PhaseSync {
		r.Message = fmt.Sprintf("sync %d asked for", syncs+1)
		p.dispatch(r, phase, syncs+1, c)
		return ""
	}
	r.Message = fmt.Sprintf("switch asked for after %d syncs", syncs)
	p.dispatch(r, phase, syncs+1, c)
	return ""
}

// automatic turns an on-demand migration automatic from where it is.
func (p *mpass) automatic(r *events.MigrationStateChanged, c events.Envelope) string {
	if why := p.blocked(r); why != "" {
		return why
	}
	r.Automatic, r.State = true, events.MigrationRunning
	p.advance(r, c)
	return ""
}

// advance takes an automatic migration's next step after a phase: the
// first sync, a wait for the scheduled time, another sync, or the switch,
// as the re-sync rule says.
func (p *mpass) advance(r *events.MigrationStateChanged, cause events.Envelope) {
	sizes := p.m.syncSizes()
	if len(sizes) == 0 {
		r.Message = "first sync: full send"
		p.dispatch(r, events.PhaseSync, 1, cause)
		return
	}
	if r.ScheduledAt != nil && p.now.Before(*r.ScheduledAt) {
		r.State = events.MigrationScheduled
		r.Message = fmt.Sprintf("begun and synced; switches at %s", r.ScheduledAt.UTC().Format(time.RFC3339))
		p.record(*r, cause)
		return
	}
	r.State = events.MigrationRunning
	sw, why := switchNow(sizes, p.settings())
	r.Message = why
	if sw {
		r.Message = "switching: " + why
		p.dispatch(r, events.PhaseSwitch, len(sizes)+1, cause)
		return
	}
	p.dispatch(r, events.PhaseSync, len(sizes)+1, cause)
}

// pause stops a migration after its running sync pass: the record says
// paused at once, the pass ends, and nothing follows until sync, switch
// or automatic.
func (p *mpass) pause(r *events.MigrationStateChanged, c events.Envelope) string {
	ph := p.m.running()
	if r.State != events.MigrationRunning || ph == nil || ph.d.Phase != events.PhaseSync {
		cur := r.Phase
		if ph != nil {
			cur = ph.d.Phase
		}
		return fmt.Sprintf("pause only during sync (the migration is %s, phase %s)", r.State, cur)
	}
	r.State = events.MigrationPaused
	r.Message = fmt.Sprintf("paused: takes effect when sync %d ends", ph.d.Sync)
	p.record(*r, c)
	return ""
}

// abort returns the source to its prior state, at any point before the
// switch; an aborted migration never resumes.
func (p *mpass) abort(r *events.MigrationStateChanged, c events.Envelope) string {
	ph := p.m.running()
	switch {
	case r.Switched:
		return "the switch has committed: roll back instead"
	case r.State != events.MigrationQueued && r.State != events.MigrationScheduled &&
		r.State != events.MigrationRunning && r.State != events.MigrationPaused:
		return "the migration is " + string(r.State)
	case ph != nil && ph.d.Phase == events.PhaseSwitch:
		return "the switch is under way; roll back once it has committed"
	case ph != nil && ph.d.Phase == "abort":
		return "already aborting"
	}
	if r.State == events.MigrationQueued {
		r.State, r.Message = events.MigrationAborted, "aborted while queued: nothing had begun"
		p.record(*r, c)
		return ""
	}
	r.State = events.MigrationRunning
	r.Message = fmt.Sprintf("aborting: returning %s to its prior state (%s) on %s", r.Instance, r.PriorRunState, r.Source)
	p.dispatch(r, "abort", 0, c)
	return ""
}

// rollback moves a switched instance back to its source, before finalize.
func (p *mpass) rollback(r *events.MigrationStateChanged, c events.Envelope) string {
	switch {
	case !r.Switched:
		return "the switch has not committed: abort instead"
	case r.Finalized:
		return "the migration is finalized: the source copy is gone"
	case p.m.running() != nil:
		return fmt.Sprintf("phase %s is still running", p.m.running().d.Phase)
	}
	r.State = events.MigrationRunning
	r.Message = fmt.Sprintf("rolling back to %s: sending the changes since the switch", r.Source)
	p.dispatch(r, "rollback", 0, c)
	return ""
}

// finalize drops the source copy of a switched migration.
func (p *mpass) finalize(r *events.MigrationStateChanged, c events.Envelope, why string) string {
	switch {
	case !r.Switched:
		return "the switch has not committed"
	case r.Finalized:
		return "already finalized"
	case p.m.running() != nil:
		return fmt.Sprintf("phase %s is still running", p.m.running().d.Phase)
	}
	r.Message = why + ": dropping the source copy on " + r.Source
	p.dispatch(r, "finalize", 0, c)
	return ""
}

// reschedule changes when a scheduled migration switches.
func (p *mpass) reschedule(r *events.MigrationStateChanged, c events.Envelope, a events.MigrationActionRequested) string {
	switch {
	case r.Switched:
		return "the switch has committed"
	case r.State != events.MigrationQueued && r.State != events.MigrationScheduled &&
		r.State != events.MigrationRunning && r.State != events.MigrationPaused:
		return "the migration is " + string(r.State)
	case a.ScheduledAt == nil:
		return "no time given"
	}
	r.ScheduledAt, r.Automatic = a.ScheduledAt, true
	if r.State == events.MigrationPaused && p.m.running() == nil && p.began() {
		r.State = events.MigrationScheduled
	}
	r.Message = "switch scheduled at " + a.ScheduledAt.UTC().Format(time.RFC3339)
	p.record(*r, c)
	return ""
}
