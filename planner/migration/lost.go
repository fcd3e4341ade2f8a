package migration

import (
	"fmt"

	"github.com/drovehq/drove/events"
)

// lost ends an unswitched migration one of whose nodes is offline —
// marked so by an operator, or declared lost when its lease expired
// (planner/nodes) — as RFD 34's "Fatal errors" say (DESIGN.md, "Node
// lifecycle"):
//
//   - source lost: every phase runs there, and only an operator can bring
//     it back; the migration fails at once saying so (sourceGone), the
//     target holding at most a partial copy, and a phase owed there is
//     canceled (cancelOwed);
//   - target lost: the migration fails and an abort is dispatched to the
//     source, superseding the phase under way there, so the source keeps
//     (or restarts) the instance. A switch already under way is left to
//     end: the executor's fence stops a cut-off source from switching, and
//     a switch that committed is recorded as such, the record then saying
//     that the instance runs on a lost node.
//
// It reports whether the migration's timers must wait (it decided
// something, or a switched migration's target is lost: no automatic
// finalize then).
func (p *pass) lost() bool {
	m := p.m
	r := *m.rec
	if !m.active() {
		return false
	}
	cause := events.Envelope{}
	if m.created != nil {
		cause = *m.created
	}
	switch {
	case r.Switched:
		if !p.offline(r.Target) {
			return false
		}
		// No automatic finalize while the target is lost: the source
		// copy may be the only one left.
		if r.ErrorDetail == "" {
			r.Error = fmt.Sprintf("target node %s lost after the switch", r.Target)
			r.ErrorDetail = fmt.Sprintf("operator action needed: %s was switched to %s, which is now offline; "+
				"bring %s back (then roll back or finalize), or recover %s from its copy on %s", r.Instance, r.Target,
				r.Target, r.Instance, r.Source)
			p.record(r, cause)
		}
		return true
	case p.offline(r.Source):
		if p.sourceGone(&r, "source node lost during the migration") {
			r.Message = fmt.Sprintf("failed: source node %s lost", r.Source)
			p.cancelOwed(&r, cause)
			p.record(r, cause)
			return true
		}
	case p.offline(r.Target):
		ph := m.running()
		if ph != nil && (ph.d.Phase == events.PhaseSwitch || ph.d.Phase == "abort") {
			return false // wait for its end
		}
		r.State = events.MigrationFailed
		r.Error = fmt.Sprintf("target node %s lost", r.Target)
		if p.beganNothing() { // queued, or scheduled and not begun
			r.Message = fmt.Sprintf("failed before it began: target node %s lost", r.Target)
			p.record(r, cause)
			return true
		}
		r.Message = fmt.Sprintf("target node %s lost: aborting, returning %s to its prior state (%s) on %s",
			r.Target, r.Instance, r.PriorRunState, r.Source)
		p.dispatch(&r, "abort", 0, cause)
		return true
	}
	return false
}

// cancelOwed dispatches a cancel to the lost source when a phase is owed
// there (dispatched, not ended). It supersedes that phase, so the
// source's executor ends it canceled instead of running it: one whose
// process starts again reads its partition anew and resumes the latest
// phase of each migration, with no memory of the fence that stopped it
// (an executor that lived through the loss was fenced already).
func (p *pass) cancelOwed(r *events.MigrationStateChanged, cause events.Envelope) {
	ph, seq := p.m.latest()
	if ph == nil || ph.end != nil || ph.d.Node != r.Source {
		return
	}
	p.emit(events.MigrationPhaseDispatched{
		Migration: r.Migration, Instance: r.Instance, Node: r.Source, Seq: seq + 1, Phase: events.PhaseCancel,
		Source: r.Source, Target: r.Target, Facts: ph.d.Facts,
	}, fmt.Sprintf("cancel phase %d (%s) of migration %s on %s, a lost node", seq, ph.d.Phase, r.Migration, r.Source), cause)
	r.Phase, r.PhaseRunning = events.PhaseCancel, true
	r.Message += fmt.Sprintf("; its %s phase there is canceled", ph.d.Phase)
}

// offline reports whether node is known and offline.
func (p *pass) offline(node string) bool {
	n := p.env.Inv.Nodes[node]
	return n != nil && n.Offline
}

// beganNothing reports whether no phase was ever dispatched.
func (p *pass) beganNothing() bool {
	_, seq := p.m.latest()
	return seq < 0
}
