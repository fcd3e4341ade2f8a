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
	for _, n := range drain {
		st := inv.NodeState(n)
		st.Drained = true
		p.emit(st, fmt.Sprintf("drain node %s: it is being evacuated", n))
	}
	pc := planEvent(r.id, plan)
	if refresh {
		if SamePlan(&pc, r.plan) {
			return true
		}
		p.emit(pc, fmt.Sprintf("plan refreshed on approval: the inventory changed since the dry run (%d moved, %d failed, %d jobs)",
			len(pc.Moved), len(pc.Failed), len(pc.Jobs)))
		return true
	}
	p.emit(pc, fmt.Sprintf("plan computed: %d moved, %d failed, %d jobs", len(pc.Moved), len(pc.Failed), len(pc.Jobs)))
	return true
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
