package migration

import (
	"fmt"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
)

// create answers the command that names a new migration: refuse it, queue
// it, or begin it.
func (p *pass) create(c events.Envelope, a events.MigrationActionRequested) {
	inv := p.env.Inv
	r := events.MigrationStateChanged{
		Migration: a.Migration, Instance: a.Instance, Account: a.Account, Role: a.Role,
		Automatic: a.Action != events.ActionBegin, ScheduledAt: a.ScheduledAt,
		State: events.MigrationRunning, Phase: events.PhaseBegin, Source: "unknown",
		MaxDowntimeMS: p.budget().Milliseconds(),
	}
	if b := a.Downtime; b != nil {
		r.PredictedDowntimeMS = b.PredictedMS // the gateway's, before any sync
	}
	in := inv.Instances[a.Instance]
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
	if other := p.st.activeOn(a.Instance); other != nil {
		refuse(fmt.Sprintf("instance %s is already migrating: migration %s (%s)", a.Instance, other.id, other.rec.State))
		return
	}
	if req, ok := p.env.Busy()[a.Instance]; ok {
		refuse(fmt.Sprintf("instance %s is being moved by request %s", a.Instance, req))
		return
	}
	if why := in.Storage.MigrationRefusal(); why != "" {
		refuse(fmt.Sprintf("storage %s %s", in.Storage, why))
		return
	}
	target, why := p.pickTarget(in, a.Target)
	if target == "" {
		refuse("no target: " + why)
		return
	}
	r.Target = target
	if used, limit := p.st.slotsUsed(r.Source), p.settings().MaxRunningMigrationsPerNode; used >= limit {
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
func (p *pass) pickTarget(in *events.InstanceDeclared, want string) (string, string) {
	inv := p.env.Inv
	c := inv.Cluster()
	if p.env.Reserve != nil {
		p.env.Reserve(c) // room other moves in flight still need
	}
	if want != "" {
		n := inv.Nodes[want]
		mem, disk := int64(0), int64(0)
		if i := c.NodeIndex(want); n != nil && i >= 0 {
			mem, disk = c.Nodes[i].FreeMemory, c.Nodes[i].FreeDisk
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
		case in.Storage.UsesLocalDisk() && disk < inventory.DiskTotal(in.Size):
			return "", fmt.Sprintf("node %s has %d MiB of disk free, the instance needs %d", want, disk, inventory.DiskTotal(in.Size))
		}
		// The planner's own rules too: CPU and spindle ratios, N+1,
		// exclusion and migration tags, the instance policy.
		if why, err := planner.CheckTarget(c, in.Name, want, p.env.Options); err != nil || why != "" {
			if err != nil {
				why = err.Error()
			}
			return "", why
		}
		return want, ""
	}
	req := planner.Request{Kind: planner.NodeEvacuate, Mode: planner.PrimaryOnly,
		Instances: []string{in.Name}, EvacuatedNodes: []string{in.PrimaryNode}}
	plan, err := planner.Compute(c, req, p.env.Options)
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
func (p *pass) start(r events.MigrationStateChanged, cause events.Envelope) {
	r.State, r.Phase = events.MigrationRunning, events.PhaseBegin
	r.Message = fmt.Sprintf("begin: reserving %s on %s", r.Instance, r.Target)
	p.dispatch(&r, events.PhaseBegin, 0, cause)
}

// dispatch sends phase to the source node's executor and records r.
func (p *pass) dispatch(r *events.MigrationStateChanged, phase string, sync int, cause events.Envelope) {
	if p.emitPhase(r, phase, sync, cause) {
		r.Phase = phase
	}
	p.record(*r, cause)
}

// emitPhase dispatches phase to the source, or fails r when the source is
// offline; it reports whether it dispatched.
func (p *pass) emitPhase(r *events.MigrationStateChanged, phase string, sync int, cause events.Envelope) bool {
	if p.sourceGone(r, phase+" cannot run") {
		return false
	}
	_, seq := p.m.latest()
	seq++
	budget := int64(0)
	if phase == events.PhaseSwitch {
		budget = p.budget().Milliseconds()
	}
	p.emit(events.MigrationPhaseDispatched{
		Migration: r.Migration, Instance: r.Instance, Node: r.Source, Seq: seq, Phase: phase,
		Source: r.Source, Target: r.Target, Sync: sync, SendMbps: p.settings().SendMbpsLimit,
		MaxDowntimeMS: budget, Facts: p.env.Inv.Facts(r.Instance, r.Source, r.Target),
	}, fmt.Sprintf("dispatch %s (phase %d) of migration %s to %s", phase, seq, r.Migration, r.Source), cause)
	r.PhaseRunning = true
	return true
}

// sourceGone fails r when its source node is offline: every phase runs
// there, and only an operator can bring it back.
func (p *pass) sourceGone(r *events.MigrationStateChanged, what string) bool {
	n := p.env.Inv.Nodes[r.Source]
	if n == nil || !n.Offline {
		return false
	}
	r.State = events.MigrationFailed
	r.Error = fmt.Sprintf("source node %s is offline: %s", r.Source, what)
	r.ErrorDetail = fmt.Sprintf("operator action needed: bring %s back or recover %s from it; "+
		"the instance's data is on %s and the target %s holds a partial copy", r.Source, r.Instance, r.Source, r.Target)
	return true
}
