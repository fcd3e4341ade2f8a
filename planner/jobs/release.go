package jobs

import (
	"fmt"
	"slices"

	"github.com/drovehq/drove/events"
)

// release gives every job without a fate one: cancelled if the request is,
// or if a dependency ended in a status it does not accept (Ganeti: it can
// never run); ready if every dependency ended as it accepts. Dependencies
// point at earlier jobs, so one pass in index order cascades
// cancellations. Of the ready jobs, those Choose picks within the running
// limits are released, in its order (makespan.go).
func (p *pass) release() {
	r := p.r
	var ready []int
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
		ok, dead := true, false
		for _, d := range spec.Depends {
			k := i + d.Job
			dj := r.jobs[k]
			if dj == nil || !dj.done() {
				ok = false
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
		if ok && !dead {
			ready = append(ready, i)
		}
	}
	if len(ready) == 0 {
		return
	}
	for _, i := range p.chooseReleases(ready) {
		spec := &r.plan.Jobs[i]
		p.emit(events.JobReleased{Request: r.id, Job: *spec},
			fmt.Sprintf("release job %d (%s): its dependencies are met", i, r.instanceOf(i)))
		p.advance(i)
	}
}

// limits are the caps the pass releases within: the request's own
// per-node limit, else the service's (auto when Env.AutoMovesPerNode).
func (p *pass) limits() Limits {
	lim := Limits{Cluster: p.env.MaxRunningMoves, PerNode: p.env.Options.MaxMovesPerNode, IndexOrder: p.env.IndexOrder}
	if p.env.AutoMovesPerNode && !lim.IndexOrder {
		lim.PerNode = 0
	}
	if r := p.r; r.kind == events.TypeEvacuationRequested && r.evac.MaxMovesPerNode > 0 {
		lim.PerNode = r.evac.MaxMovesPerNode
	}
	return lim
}

// chooseReleases picks, among the ready jobs, those to release now and
// their order (Choose, makespan.go).
func (p *pass) chooseReleases(ready []int) []int {
	r, inv := p.r, p.env.Inv
	links := LinksOf(inv)
	instance := func(name string) *events.InstanceDeclared { return inv.Instances[name] }
	backlog := NewBacklog()
	for i := range r.plan.Jobs {
		if p.env.IndexOrder {
			break // plan order needs no link times
		}
		j := r.jobs[i]
		if j != nil && j.done() {
			continue
		}
		ts := JobTransfers(&r.plan.Jobs[i], instance)
		if j != nil && j.released { // only the opcodes not ended yet
			k := 0
			for k < len(ts) && j.ops[k] != nil && j.ops[k].ended != "" {
				k++
			}
			ts = ts[k:]
		}
		backlog.Add(ts, links, 1)
	}
	cands := make([]Candidate, len(ready))
	for k, i := range ready {
		cands[k] = candidate(i, &r.plan.Jobs[i], JobTransfers(&r.plan.Jobs[i], instance), links)
	}
	var out []int
	for _, k := range Choose(cands, p.st.runningMoves(instance), backlog, p.limits(), links) {
		out = append(out, ready[k])
	}
	return out
}
