package service

import (
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
)

// ended answers the end of the migration's latest phase.
func (p *mpass) ended(ph *phaseRun) {
	m, d, e, cause := p.m, ph.d, ph.end, ph.endEnv
	r := *m.rec
	if e.Status != events.JobSuccess {
		p.phaseFailed(r, ph)
		return
	}
	switch d.Phase {
	case events.PhaseBegin:
		r.Message = fmt.Sprintf("begin done: %s reserved on %s", r.Instance, r.Target)
		switch {
		case r.State != events.MigrationRunning:
			p.record(r, cause)
		case r.Automatic:
			p.advance(&r, cause)
		default:
			r.State = events.MigrationPaused
			r.Message += "; run sync next"
			p.record(r, cause)
		}
	case events.PhaseSync:
		sizes := m.syncSizes()
		r.Syncs, r.LastSyncBytes = len(sizes), e.Bytes
		msg := fmt.Sprintf("sync %d done: %d bytes sent", d.Sync, e.Bytes)
		switch {
		case r.State == events.MigrationPaused:
			r.Message = msg + "; paused: resume with sync, switch or automatic"
			p.record(r, cause)
			p.emit(events.End{Request: m.id, Job: 0, Index: d.Seq, Instance: r.Instance, Node: d.Node,
				Phase: events.PhaseSync, State: events.EndPaused, Message: r.Message},
				"migration "+m.id+" paused after its sync", cause)
		case r.State != events.MigrationRunning:
			r.Message = msg
			p.record(r, cause)
		case r.Automatic:
			p.advance(&r, cause)
		default:
			r.State = events.MigrationPaused
			r.Message = msg + "; run sync again or switch"
			p.record(r, cause)
		}
	case events.PhaseSwitch:
		r.Switched, r.State = true, events.MigrationSuccessful
		r.Message = fmt.Sprintf("switched: %s runs on %s after %d ms down; the source copy on %s is kept until finalize",
			r.Instance, r.Target, e.DowntimeMS, r.Source)
		p.place(r.Target, r.Source, cause)
		p.record(r, cause)
	case "abort":
		if r.State != events.MigrationFailed {
			r.State = events.MigrationAborted
			r.Message = fmt.Sprintf("aborted: %s is back on %s, %s", r.Instance, r.Source, r.PriorRunState)
		} else {
			r.Message = fmt.Sprintf("%s is back on %s, %s, after the failure", r.Instance, r.Source, r.PriorRunState)
		}
		p.record(r, cause)
	case "rollback":
		r.Switched, r.State = false, events.MigrationAborted
		r.Message = fmt.Sprintf("rolled back: %s runs on %s again; the copy on %s is dropped", r.Instance, r.Source, r.Target)
		p.place(r.Source, r.Target, cause)
		p.record(r, cause)
	case "finalize":
		r.Finalized = true
		r.Message = fmt.Sprintf("finalized: the source copy on %s is gone", r.Source)
		p.record(r, cause)
	default:
		r.Message = fmt.Sprintf("phase %s ended %s", d.Phase, e.Status)
		p.record(r, cause)
	}
}

// phaseFailed answers a phase that ended in error (or canceled). The
// executor retried transient faults already; a fatal one means the driver
// put the source back as it was.
func (p *mpass) phaseFailed(r events.MigrationStateChanged, ph *phaseRun) {
	d, e, cause := ph.d, ph.end, ph.endEnv
	why := e.Error
	if why == "" {
		why = "ended " + string(e.Status)
	}
	switch d.Phase {
	case "rollback":
		r.Error = "rollback failed: " + why
		r.Message = fmt.Sprintf("rollback failed; %s still runs on %s", r.Instance, r.Target)
		if r.State == events.MigrationRunning {
			r.State = events.MigrationSuccessful
		}
	case "finalize":
		r.Error = "finalize failed: " + why
		r.Message = "finalize failed; finalize again to retry"
	case "abort":
		r.State = events.MigrationFailed
		r.Error = "abort failed: " + why
		r.ErrorDetail = fmt.Sprintf("operator action needed: %s may not be back in its prior state (%s) on %s",
			r.Instance, r.PriorRunState, r.Source)
	default:
		if r.State == events.MigrationFailed {
			r.Message = fmt.Sprintf("phase %s also failed: %s", d.Phase, why)
			break
		}
		r.State = events.MigrationFailed
		r.Error = fmt.Sprintf("%s phase failed: %s", d.Phase, why)
		r.Message = fmt.Sprintf("failed; %s stays on %s, %s", r.Instance, r.Source, r.PriorRunState)
		p.sourceGone(&r, "the migration failed")
	}
	p.record(r, cause)
}

// place records the instance's move from → to with the record that says
// so, in one transaction.
func (p *mpass) place(to, from string, cause events.Envelope) {
	inv := p.st.inv
	in := inv.instances[p.m.rec.Instance]
	if in == nil {
		return
	}
	group := func(n string) string {
		if x := inv.nodes[n]; x != nil {
			return x.Group
		}
		return ""
	}
	p.emit(events.InstancePlaced{
		Instance: in.Name, Group: group(to), PrimaryNode: to,
		PreviousGroup: group(from), PreviousPrimary: from, PreviousSecondary: in.SecondaryNode,
		Request: p.m.id,
	}, fmt.Sprintf("%s placed on %s by migration %s", in.Name, to, p.m.id), cause)
}

// timers takes the decisions time calls for: a queued migration's slot,
// a scheduled switch, the finalize grace period, the progress timeout.
func (p *mpass) timers() {
	m := p.m
	r := *m.rec
	s := p.settings()
	cause := events.Envelope{}
	if m.created != nil {
		cause = *m.created
	}
	switch {
	case r.State == events.MigrationQueued:
		if p.ms.slotsUsed(r.Source) < s.MaxRunningMigrationsPerNode {
			p.start(r, cause)
		}
	case r.State == events.MigrationScheduled && r.ScheduledAt != nil && !p.now.Before(*r.ScheduledAt) &&
		m.running() == nil:
		r.State = events.MigrationRunning
		p.advance(&r, cause)
	case r.State == events.MigrationSuccessful && r.Switched && !r.Finalized && s.FinalizeGraceSeconds > 0 &&
		m.running() == nil && !p.dispatched("finalize"):
		if at := p.switchedAt(); !at.IsZero() && !p.now.Before(at.Add(seconds(s.FinalizeGraceSeconds))) {
			p.finalize(&r, cause, fmt.Sprintf("finalizing after the grace period of %ds", s.FinalizeGraceSeconds))
		}
	case r.State == events.MigrationRunning || r.State == events.MigrationPaused:
		p.stalled(r)
	}
}

// stalled re-dispatches a running phase that reported no progress for the
// progress timeout (the driver resumes from its last good point), and
// fails the migration after StallRetries such retries.
func (p *mpass) stalled(r events.MigrationStateChanged) {
	m := p.m
	ph, seq := m.latest()
	if ph == nil || ph.end != nil {
		return
	}
	key := seenKey(m.id, seq)
	last, ok := p.ms.seen[key]
	if !ok {
		p.ms.seen[key] = p.now
		return
	}
	timeout := seconds(p.settings().ProgressTimeoutSeconds)
	if p.now.Sub(last) < timeout {
		return
	}
	d := ph.d
	cause := ph.dEnv
	if p.sourceGone(&r, fmt.Sprintf("phase %s stalled", d.Phase)) {
		p.record(r, cause)
		return
	}
	n, limit := m.retries(), p.svc.cfg.StallRetries
	if n < limit {
		r.Message = fmt.Sprintf("stalled: no progress in phase %s for %s; dispatched again (retry %d of %d)",
			d.Phase, timeout, n+1, limit)
		p.dispatch(&r, d.Phase, d.Sync, cause)
		return
	}
	r.State = events.MigrationFailed
	r.Error = fmt.Sprintf("phase %s stalled: no progress for %s, %d times in a row", d.Phase, timeout, n+1)
	switch d.Phase {
	case events.PhaseBegin, events.PhaseSync:
		r.Message = "failed; aborting to return the source to its prior state"
		p.dispatch(&r, "abort", 0, cause)
	default:
		r.ErrorDetail = fmt.Sprintf("operator action needed: the %s phase of %s did not finish; check %s and %s",
			d.Phase, r.Instance, r.Source, r.Target)
		p.record(r, cause)
	}
}

func (p *mpass) dispatched(phase string) bool {
	for _, ph := range p.m.phases {
		if ph.d != nil && ph.d.Phase == phase {
			return true
		}
	}
	return false
}

// switchedAt is when the last successful switch ended, by its event.
func (p *mpass) switchedAt() time.Time {
	var at time.Time
	for _, ph := range p.m.phases {
		if ph.d != nil && ph.d.Phase == events.PhaseSwitch && ph.end != nil && ph.end.Status == events.JobSuccess &&
			ph.endEnv.Time.After(at) {
			at = ph.endEnv.Time
		}
	}
	return at
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }
