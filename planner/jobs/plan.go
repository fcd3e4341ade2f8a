package jobs

import (
	"fmt"
	"slices"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

func (p *pass) reject(reason string, cause ...events.Envelope) {
	p.emit(events.RequestRejected{Request: p.r.id, Reason: reason}, "request rejected: "+reason, cause...)
	p.out.Outcome = "rejected"
}

// plan validates the request against the state and computes its plan. The
// first time (refresh false) it drains the evacuated nodes and appends the
// plan; on approval (refresh true) it appends a new plan only if a decision
// changed. It reports whether the request goes on.
func (p *pass) plan(refresh bool) bool {
	r, inv := p.r, p.env.Inv
	instances, reason := p.validate()
	if reason != "" {
		p.reject(reason)
		return false
	}
	c := inv.Cluster()
	p.reserveInFlight(c)
	var drain []string
	if r.kind == events.TypeEvacuationRequested {
		for _, n := range r.evac.Nodes {
			if i := c.NodeIndex(n); i >= 0 && !c.Nodes[i].Drained {
				c.Nodes[i].Drained = true
				if !slices.Contains(drain, n) {
					drain = append(drain, n)
				}
			}
		}
	}
	req := planner.Request{Instances: instances}
	opts := p.env.Options
	opts.LimitAtRelease = !p.env.IndexOrder // release keeps the per-node limit
	switch r.kind {
	case events.TypeEvacuationRequested:
		req.Kind, req.Mode, req.EvacuatedNodes = planner.NodeEvacuate, planner.EvacMode(r.evac.Mode), r.evac.Nodes
		if r.evac.MaxMovesPerNode > 0 {
			opts.MaxMovesPerNode = r.evac.MaxMovesPerNode
		}
		opts.IgnoreSoftErrors = opts.IgnoreSoftErrors || r.evac.IgnoreSoftErrors
	case events.TypeGroupChangeRequested:
		req.Kind, req.TargetGroups = planner.ChangeGroup, r.change.TargetGroups
	}
	start := time.Now()
	plan, err := planner.Compute(c, req, opts)
	if p.env.PlanTook != nil {
		p.env.PlanTook(time.Since(start))
	}
	if err != nil {
		p.reject("cannot plan: " + err.Error())
		return false
	}
	pc := planEvent(r.id, plan)
	why := fmt.Sprintf("plan computed: %d moved, %d failed, %d jobs", len(pc.Moved), len(pc.Failed), len(pc.Jobs))
	if refresh {
		if SamePlan(&pc, r.plan) {
			return true
		}
		why = fmt.Sprintf("plan refreshed on approval: the inventory changed since the dry run (%d moved, %d failed, %d jobs)",
			len(pc.Moved), len(pc.Failed), len(pc.Jobs))
	}
	var ds []decision
	for _, n := range drain {
		st := inv.NodeState(n)
		st.Drained = true
		ds = append(ds, p.event(st, fmt.Sprintf("drain node %s: it is being evacuated; %s", n, r.originWhy())))
	}
	ds = append(ds, p.planParts(pc, why)...)
	if err := p.fits(ds); err != nil {
		p.fail("its plan cannot be appended: " + err.Error())
		return false
	}
	for _, d := range ds {
		p.take(d)
	}
	return true
}

// planParts builds the plan's events: one, or parts of at most
// PlanPartBytes each when it is larger (events.SplitPlan).
func (p *pass) planParts(pc events.PlanComputed, why string) []decision {
	size := p.env.PlanPartBytes
	if size <= 0 {
		size = 1 << 20
	}
	parts := events.SplitPlan(pc, events.NewID(), size)
	out := make([]decision, len(parts))
	for k, part := range parts {
		w := why
		if len(parts) > 1 {
			w = fmt.Sprintf("%s (part %d of %d)", why, k+1, len(parts))
		}
		out[k] = p.event(part, w+"; "+p.r.originWhy())
	}
	return out
}

// fail closes the pass's request for a reason of its own when one of its
// decisions cannot be appended: rejected if nothing of its plan ran yet,
// else every job not released yet is cancelled (the request finishes as
// its running jobs end). Its events carry the reason without the
// requester's, which may be what made them too large.
func (p *pass) fail(reason string) {
	r := p.r
	if r.plan == nil || !r.anyFate() {
		p.take(p.event(events.RequestRejected{Request: r.id, Reason: reason}, "request rejected: "+reason))
		p.out.Outcome = "rejected"
		return
	}
	for i := range r.plan.Jobs {
		if j := r.jobs[i]; j == nil || (!j.released && !j.done()) {
			p.take(p.event(events.JobCancelled{Request: r.id, Job: i, Reason: reason},
				fmt.Sprintf("job %d cancelled before it ran: %s", i, reason)))
		}
	}
}

// validate checks the request against the state and lists the instances
// it moves; a non-empty reason rejects it.
func (p *pass) validate() (instances []string, reason string) {
	r, inv := p.r, p.env.Inv
	switch r.kind {
	case events.TypeEvacuationRequested:
		for _, n := range r.evac.Nodes {
			if _, ok := inv.Nodes[n]; !ok {
				return nil, fmt.Sprintf("unknown node %q", n)
			}
		}
		for _, name := range inv.InstanceOrder {
			in := inv.Instances[name]
			pri, sec := slices.Contains(r.evac.Nodes, in.PrimaryNode), slices.Contains(r.evac.Nodes, in.SecondaryNode)
			switch r.evac.Mode {
			case events.EvacPrimaryOnly:
				sec = false
			case events.EvacSecondaryOnly:
				pri = false
			}
			if pri || sec {
				instances = append(instances, name)
			}
		}
	case events.TypeGroupChangeRequested:
		for _, name := range r.change.Instances {
			if _, ok := inv.Instances[name]; !ok {
				return nil, fmt.Sprintf("unknown instance %q", name)
			}
		}
		instances = r.change.Instances
	}
	busy := p.st.BusyInstances()
	for _, in := range instances {
		if other, ok := busy[in]; ok && other != r.id {
			return nil, fmt.Sprintf("instance %q is already being moved by active request %s", in, other)
		}
		if p.env.Migrating != nil {
			if m := p.env.Migrating(in); m != "" {
				return nil, fmt.Sprintf("instance %q is being migrated by migration %s", in, m)
			}
		}
	}
	return instances, ""
}
