package jobs

import (
	"fmt"
	"slices"

	"github.com/drovehq/drove/events"
)

// release gives every job without a fate one: cancelled if the request is,
// or if a dependency ended in a status it does not accept (Ganeti: it can
// never run); released if every dependency ended as it accepts and the
// running limits allow. Dependencies point at earlier jobs, so one pass in
// index order cascades cancellations.
func (p *pass) release() {
	r := p.r
	total, perNode := p.st.running()
	limit := p.env.Options.MaxMovesPerNode
	if r.kind == events.TypeEvacuationRequested && r.evac.MaxMovesPerNode > 0 {
		limit = r.evac.MaxMovesPerNode
	}
	for i := range r.plan.Jobs {
		if j := r.jobs[i]; j != nil && (j.released || j.done()) {
			continue
		}
		spec := &r.plan.Jobs[i]
		if r.cancelled != nil {
			p.emit(events.JobCancelled{Request: r.id, Job: i, Reason: "request cancelled"},
				fmt.Sprintf("job %d cancelled before it ran: %s", i, cancelReason(r)), *r.cancelled)
			continue
		}
		ready, dead := true, false
		for _, d := range spec.Depends {
			k := i + d.Job
			dj := r.jobs[k]
			if dj == nil || !dj.done() {
				ready = false
				continue
			}
			if len(d.Statuses) > 0 && !slices.Contains(d.Statuses, dj.status()) {
				reason := fmt.Sprintf("dependency job %d ended %s", k, dj.status())
				p.emit(events.JobCancelled{Request: r.id, Job: i, Reason: reason},
					fmt.Sprintf("job %d can never run: %s, not %v", i, reason, d.Statuses), dj.endEnv)
				dead = true
				break
			}
		}
		if dead || !ready {
			continue
		}
		from := Senders(spec)
		if total >= p.env.MaxRunningMoves || slices.ContainsFunc(from, func(n string) bool { return perNode[n] >= limit }) {
			continue // waits for a running job to end
		}
		p.emit(events.JobReleased{Request: r.id, Job: *spec},
			fmt.Sprintf("release job %d (%s): its dependencies are met", i, r.instanceOf(i)))
		total++
		for _, n := range from {
			perNode[n]++
		}
		p.advance(i)
	}
}
