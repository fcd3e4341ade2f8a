package migration

import (
	"fmt"

	"github.com/drovehq/drove/events"
)

// ended answers the end of the migration's latest phase.
func (p *pass) ended(ph *phaseRun) {
	m, d, e, cause := p.m, ph.d, ph.end, ph.endEnv
	r := *m.rec
	r.PhaseRunning = false
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
		p.predicted(&r, sizes)
		msg := fmt.Sprintf("sync %d done: %d bytes sent", d.Sync, e.Bytes)
		switch {
		case e.AtSwitchPoint && r.State == events.MigrationRunning:
			p.atSwitchPoint(&r, msg, cause)
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
	case events.PhasePause:
		r.Syncs = len(m.syncSizes())
		r.Message = fmt.Sprintf("paused: sync %d stopped, %d syncs complete; resume with sync, switch or automatic", d.Sync, r.Syncs)
		if m.stoppedAtSwitchPoint(d.Sync) {
			r.Message = fmt.Sprintf("paused after sync %d, with the instance stopped at the switch point (nothing was left to copy): it is down until you switch or abort", d.Sync)
		}
		p.record(r, cause)
		p.emit(events.End{Request: m.id, Job: 0, Index: d.Seq, Instance: r.Instance, Node: d.Node,
			Phase: events.PhaseSync, State: events.EndPaused, Message: r.Message},
			"migration "+m.id+" paused during its sync", cause)
	case events.PhaseSwitch:
		r.Switched, r.State = true, events.MigrationSuccessful
		r.DowntimeMS, r.WorkloadDowntimeMS = e.DowntimeMS, e.WorkloadDowntimeMS
		r.Message = fmt.Sprintf("switched: %s runs on %s after %s; the source copy on %s is kept until finalize",
			r.Instance, r.Target, downText(e), r.Source)
		if in := p.env.Inv.Instances[r.Instance]; in != nil && in.Storage.Shared() {
			r.Message = fmt.Sprintf("switched: %s runs on %s after %s; its storage is shared, so finalize has no source copy to drop",
				r.Instance, r.Target, downText(e))
		}
		if m.postcopy {
			r.Message += "; it went post-copy during the switch, when it could no longer be aborted"
		}
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
		r.DowntimeMS, r.WorkloadDowntimeMS = e.DowntimeMS, e.WorkloadDowntimeMS
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

// atSwitchPoint answers a sync that left the instance stopped at the
// switch point (a live pre-copy with nothing left dirty: QEMU stops the
// guest there and waits): the switch follows at once, whatever would
// have come next — the operator's word, a scheduled time, another sync
// for the budget — since from here the instance is down until the
// switch. A migration paused during that sync stays paused (its pause is
// still under way) and its record says the instance is down.
func (p *pass) atSwitchPoint(r *events.MigrationStateChanged, msg string, cause events.Envelope) {
	r.State = events.MigrationRunning
	r.Message = msg + "; the instance stopped at the switch point (nothing was left to copy), so it switches at once: it is down until the switch"
	p.dispatch(r, events.PhaseSwitch, len(p.m.syncSizes())+1, cause)
}

// downText is a switch's downtime for a record's message: Drove's figure,
// and the workload's when its timeline gave one.
func downText(e *events.MigrationPhaseEnded) string {
	if e.WorkloadDowntimeMS == 0 {
		return fmt.Sprintf("%d ms down", e.DowntimeMS)
	}
	return fmt.Sprintf("%d ms down (%d ms by the workload's own timeline)", e.DowntimeMS, e.WorkloadDowntimeMS)
}

// phaseFailed answers a phase that ended in error (or canceled). The
// executor retried transient faults already; a fatal one means the driver
// put the source back as it was.
func (p *pass) phaseFailed(r events.MigrationStateChanged, ph *phaseRun) {
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
	case events.PhaseCancel:
		r.Message = fmt.Sprintf("the phase owed on %s, a lost node, ended canceled", r.Source)
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
func (p *pass) place(to, from string, cause events.Envelope) {
	inv := p.env.Inv
	in := inv.Instances[p.m.rec.Instance]
	if in == nil {
		return
	}
	group := func(n string) string {
		if x := inv.Nodes[n]; x != nil {
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
