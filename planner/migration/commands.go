package migration

import (
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
)

func (p *pass) command(c events.Envelope) {
	a, err := events.As[events.MigrationActionRequested](c)
	if err != nil {
		p.st.handled[c.ID] = true // Decode checked it; nothing to answer
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
			p.env.Log.Warn("command for an unknown migration ignored", "migration", a.Migration, "action", a.Action)
			p.st.handled[c.ID] = true
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

// blocked says why the next phase cannot be asked for now ("" if it can).
func (p *pass) blocked(r *events.MigrationStateChanged) string {
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

func (p *pass) began() bool {
	for _, ph := range p.m.phases {
		if ph.d != nil && ph.d.Phase == events.PhaseBegin && ph.end != nil && ph.end.Status == events.JobSuccess {
			return true
		}
	}
	return false
}

// step runs one on-demand phase (sync or switch), in order. A paused
// migration resumes this way and keeps its mode.
func (p *pass) step(r *events.MigrationStateChanged, c events.Envelope, phase string) string {
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
	if why := p.overBudget(p.m.syncSizes()); why != "" {
		return why
	}
	r.Message = fmt.Sprintf("switch asked for after %d syncs", syncs)
	p.dispatch(r, phase, syncs+1, c)
	return ""
}

// automatic turns an on-demand migration automatic from where it is.
func (p *pass) automatic(r *events.MigrationStateChanged, c events.Envelope) string {
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
func (p *pass) advance(r *events.MigrationStateChanged, cause events.Envelope) {
	sizes := p.m.syncSizes()
	if len(sizes) == 0 {
		r.Message = "first sync: full send"
		p.dispatch(r, events.PhaseSync, 1, cause)
		return
	}
	if r.ScheduledAt != nil && p.env.Now.Before(*r.ScheduledAt) {
		r.State = events.MigrationScheduled
		r.Message = fmt.Sprintf("begun and synced; switches at %s", r.ScheduledAt.UTC().Format(time.RFC3339))
		p.record(*r, cause)
		return
	}
	r.State = events.MigrationRunning
	pred, budget := p.predicted(r, sizes)
	next, why := nextStep(switchNow(sizes, p.settings()), pred, budget)
	switch next {
	case stepSwitch:
		r.Message = "switching: " + why
		p.dispatch(r, events.PhaseSwitch, len(sizes)+1, cause)
	case stepFail:
		r.State, r.Error = events.MigrationFailed, why
		r.Message = "failed; aborting to return the source to its prior state"
		p.dispatch(r, "abort", 0, cause)
	default:
		r.Message = why
		p.dispatch(r, events.PhaseSync, len(sizes)+1, cause)
	}
}

// pause stops a migration's running sync at once (seed 000: pausing stops
// the send, it does not wait for the pass): a pause phase supersedes the
// sync on the source, whose executor cancels it; the driver keeps the
// last complete snapshot as the next sync's base. The record says paused
// at once and keeps phase sync; nothing follows until sync, switch or
// automatic.
func (p *pass) pause(r *events.MigrationStateChanged, c events.Envelope) string {
	ph := p.m.running()
	if r.State != events.MigrationRunning || ph == nil || ph.d.Phase != events.PhaseSync {
		cur := r.Phase
		if ph != nil {
			cur = ph.d.Phase
		}
		return fmt.Sprintf("pause only during sync (the migration is %s, phase %s)", r.State, cur)
	}
	r.State = events.MigrationPaused
	r.Message = fmt.Sprintf("pausing: stopping sync %d", ph.d.Sync)
	p.emitPhase(r, events.PhasePause, ph.d.Sync, c)
	p.record(*r, c)
	return ""
}

// abort returns the source to its prior state, at any point before the
// switch; an aborted migration never resumes.
func (p *pass) abort(r *events.MigrationStateChanged, c events.Envelope) string {
	ph := p.m.running()
	switch {
	case p.m.postcopy && r.State == events.MigrationRunning:
		return fmt.Sprintf("the live move went post-copy: %s already runs on %s and can no longer be aborted; it finishes, then roll back if needed",
			r.Instance, r.Target)
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
func (p *pass) rollback(r *events.MigrationStateChanged, c events.Envelope) string {
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
func (p *pass) finalize(r *events.MigrationStateChanged, c events.Envelope, why string) string {
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
func (p *pass) reschedule(r *events.MigrationStateChanged, c events.Envelope, a events.MigrationActionRequested) string {
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
