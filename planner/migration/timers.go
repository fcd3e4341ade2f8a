package migration

import (
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
)

// timers takes the decisions time calls for: a queued migration's slot,
// a scheduled switch, the finalize grace period, the progress timeout.
func (p *pass) timers() {
	m := p.m
	r := *m.rec
	s := p.settings()
	cause := events.Envelope{}
	if m.created != nil {
		cause = *m.created
	}
	switch {
	case r.State == events.MigrationQueued:
		if p.st.slotsUsed(r.Source) < s.MaxRunningMigrationsPerNode {
			p.start(r, cause)
		}
	case r.State == events.MigrationScheduled && r.ScheduledAt != nil && !p.env.Now.Before(*r.ScheduledAt) &&
		m.running() == nil:
		r.State = events.MigrationRunning
		p.advance(&r, cause)
	case r.State == events.MigrationSuccessful && r.Switched && !r.Finalized && s.FinalizeGraceSeconds > 0 &&
		m.running() == nil && !p.dispatched("finalize"):
		if at := p.switchedAt(); !at.IsZero() && !p.env.Now.Before(at.Add(seconds(s.FinalizeGraceSeconds))) {
			p.finalize(&r, cause, fmt.Sprintf("finalizing after the grace period of %ds", s.FinalizeGraceSeconds))
		}
	case r.State == events.MigrationRunning || r.State == events.MigrationPaused:
		p.stalled(r)
	}
}

// stalled re-dispatches a running phase that reported no progress for the
// progress timeout (the driver resumes from its last good point), and
// fails the migration after StallRetries such retries.
func (p *pass) stalled(r events.MigrationStateChanged) {
	m := p.m
	ph, seq := m.latest()
	if ph == nil || ph.end != nil {
		return
	}
	key := seenKey(m.id, seq)
	last, ok := p.st.seen[key]
	if !ok {
		p.st.seen[key] = p.env.Now
		return
	}
	timeout := seconds(p.settings().ProgressTimeoutSeconds)
	if p.env.Now.Sub(last) < timeout {
		return
	}
	d := ph.d
	cause := ph.dEnv
	if p.sourceGone(&r, fmt.Sprintf("phase %s stalled", d.Phase)) {
		p.record(r, cause)
		return
	}
	n, limit := m.retries(), p.env.StallRetries
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

func (p *pass) dispatched(phase string) bool {
	for _, ph := range p.m.phases {
		if ph.d != nil && ph.d.Phase == phase {
			return true
		}
	}
	return false
}

// switchedAt is when the last successful switch ended, by its event.
func (p *pass) switchedAt() time.Time {
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
