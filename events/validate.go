package events

import (
	"fmt"
	"slices"
)

// The check methods hold what the JSON shape cannot: required names, enum
// sets, and the few cross-field rules whose violation would make a consumer
// act wrongly. They run on both Encode and Decode, and report every problem.

func oneOf[T ~string](p *problems, field string, v T, allowed ...T) {
	if !slices.Contains(allowed, v) {
		if v == "" {
			p.addf(field, "missing")
			return
		}
		p.addf(field, "unknown value %q (want one of %v)", v, allowed)
	}
}

func nonNegative[T int | int64 | float64](p *problems, field string, v T) {
	if v < 0 {
		p.addf(field, "negative (%v)", v)
	}
}

// MaxViewInt bounds the whole numbers of counts and seconds an event
// carries from a request: what a view's int column holds. An event over
// it would stop every fold of the log at that event.
const MaxViewInt = 1<<31 - 1

// viewInt checks that v fits a view's int column.
func viewInt(p *problems, field string, v int) {
	if v > MaxViewInt {
		p.addf(field, "must be at most %d", MaxViewInt)
	}
}

func noEmpty(p *problems, field string, vs []string) {
	for i, v := range vs {
		if v == "" {
			p.addf(fmt.Sprintf("%s[%d]", field, i), "empty")
		}
	}
}

func (r Resources) check(p *problems, field string) {
	nonNegative(p, field+".memory_mib", r.MemoryMiB)
	nonNegative(p, field+".disk_mib", r.DiskMiB)
	nonNegative(p, field+".cpus", r.CPUs)
	nonNegative(p, field+".spindles", r.Spindles)
}

func (g GroupDeclared) check(p *problems) {
	p.require("name", g.Name)
	oneOf(p, "alloc_policy", g.AllocPolicy, AllocPreferred, AllocLastResort, AllocUnallocable)
	if g.Policy != nil {
		g.Policy.check(p, "ipolicy")
	}
	noEmpty(p, "cluster_tags", g.ClusterTags)
}

func (n NodeAnnounced) check(p *problems) {
	p.require("name", n.Name)
	p.require("group", n.Group)
	n.Total.check(p, "total")
	n.Free.check(p, "free")
	nonNegative(p, "reserved_memory_mib", n.ReservedMemoryMiB)
	nonNegative(p, "send_bytes_per_second", n.SendBytesPerSecond)
	nonNegative(p, "receive_bytes_per_second", n.ReceiveBytesPerSecond)
}

func (n NodeUpdated) check(p *problems) { NodeAnnounced(n).check(p) }

func (in InstanceDeclared) check(p *problems) {
	p.require("name", in.Name)
	p.require("owner", in.Owner)
	p.require("primary_node", in.PrimaryNode)
	nonNegative(p, "size.memory_mib", in.Size.MemoryMiB)
	nonNegative(p, "size.vcpus", in.Size.VCPUs)
	nonNegative(p, "size.spindles", in.Size.Spindles)
	for i, d := range in.Size.DisksMiB {
		nonNegative(p, fmt.Sprintf("size.disks_mib[%d]", i), d)
	}
	oneOf(p, "storage", in.Storage, StorageKinds()...)
	oneOf(p, "run_state", in.RunState, RunRunning, RunStopped, RunOffline)
	// The planner decides how an instance can move from its storage kind
	// and secondary together; one without the other is a lie it would act on.
	switch {
	case in.Storage.InternallyMirrored() && in.SecondaryNode == "":
		p.addf("secondary_node", "missing for %s storage", in.Storage)
	case !in.Storage.InternallyMirrored() && in.SecondaryNode != "":
		p.addf("secondary_node", "set for %s storage, which has no secondary", in.Storage)
	}
	if in.SecondaryNode != "" && in.SecondaryNode == in.PrimaryNode {
		p.addf("secondary_node", "same as primary_node %q", in.PrimaryNode)
	}
	downtimeBudget(p, "max_downtime_ms", in.MaxDowntimeMS)
}

// downtimeBudget checks a downtime budget in milliseconds: 0 is none (or
// follows the next one), a negative one means nothing, and the views keep
// it in an int column.
func downtimeBudget(p *problems, field string, ms int64) {
	nonNegative(p, field, ms)
	if ms > MaxViewInt {
		p.addf(field, "must be at most %d", MaxViewInt)
	}
}

func (ip InstancePlaced) check(p *problems) {
	p.require("instance", ip.Instance)
	p.require("group", ip.Group)
	p.require("primary_node", ip.PrimaryNode)
	p.require("previous_group", ip.PreviousGroup)
	p.require("previous_primary", ip.PreviousPrimary)
}

func (r EvacuationRequested) check(p *problems) {
	p.require("request", r.Request)
	if len(r.Nodes) == 0 {
		p.addf("nodes", "missing")
	}
	noEmpty(p, "nodes", r.Nodes)
	oneOf(p, "mode", r.Mode, EvacPrimaryOnly, EvacSecondaryOnly, EvacAll)
	nonNegative(p, "max_moves_per_node", r.MaxMovesPerNode)
	viewInt(p, "max_moves_per_node", r.MaxMovesPerNode)
}

func (r GroupChangeRequested) check(p *problems) {
	p.require("request", r.Request)
	if len(r.Instances) == 0 {
		p.addf("instances", "missing")
	}
	noEmpty(p, "instances", r.Instances)
	noEmpty(p, "target_groups", r.TargetGroups)
}

func (r RequestApproved) check(p *problems)  { p.require("request", r.Request) }
func (r RequestCancelled) check(p *problems) { p.require("request", r.Request) }

func (r RequestRejected) check(p *problems) {
	p.require("request", r.Request)
	p.require("reason", r.Reason)
}

func checkOutcome(p *problems, moved []Moved, failed []Failed) {
	for i, m := range moved {
		p.require(fmt.Sprintf("moved[%d].instance", i), m.Instance)
		p.require(fmt.Sprintf("moved[%d].group", i), m.Group)
		noEmpty(p, fmt.Sprintf("moved[%d].nodes", i), m.Nodes)
	}
	for i, f := range failed {
		p.require(fmt.Sprintf("failed[%d].instance", i), f.Instance)
		p.require(fmt.Sprintf("failed[%d].reason", i), f.Reason)
	}
}

func (r RequestFinished) check(p *problems) {
	p.require("request", r.Request)
	checkOutcome(p, r.Moved, r.Failed)
}

func (pc PlanComputed) check(p *problems) {
	p.require("request", pc.Request)
	checkOutcome(p, pc.Moved, pc.Failed)
	if pc.Parts > 1 || pc.Plan != "" || pc.Part != 0 || pc.FirstJob != 0 {
		p.require("plan", pc.Plan)
		if pc.Part < 0 || pc.Part >= pc.Parts {
			p.addf("part", "is %d, want 0 to parts-1 (parts %d)", pc.Part, pc.Parts)
		}
		nonNegative(p, "first_job", pc.FirstJob)
	}
	for i, j := range pc.Jobs {
		if j.Index != pc.FirstJob+i {
			p.addf(fmt.Sprintf("jobs[%d].index", i), "is %d, want its position %d", j.Index, pc.FirstJob+i)
		}
		j.check(p, fmt.Sprintf("jobs[%d]", i))
	}
}

// check validates a job on its own; a dependency must point at an earlier
// job, which an index below zero never is.
func (j Job) check(p *problems, field string) {
	nonNegative(p, field+".index", j.Index)
	if len(j.Opcodes) == 0 {
		p.addf(field+".opcodes", "missing")
	}
	for i, op := range j.Opcodes {
		op.check(p, fmt.Sprintf("%s.opcodes[%d]", field, i))
	}
	for i, d := range j.Depends {
		f := fmt.Sprintf("%s.depends[%d]", field, i)
		if d.Job >= 0 || j.Index+d.Job < 0 {
			p.addf(f+".job", "%d does not point at an earlier job of job %d", d.Job, j.Index)
		}
		for k, s := range d.Statuses {
			oneOf(p, fmt.Sprintf("%s.statuses[%d]", f, k), s, JobSuccess, JobError, JobCanceled)
		}
	}
}

func (op Opcode) check(p *problems, field string) {
	p.require(field+".instance", op.Instance)
	oneOf(p, field+".op_id", op.OpID, OpInstanceMigrate, OpInstanceFailover, OpInstanceReplaceDisks)
	switch op.OpID {
	case OpInstanceReplaceDisks:
		oneOf(p, field+".mode", op.Mode,
			ModeReplaceNewSecondary, ModeReplaceOnPrimary, ModeReplaceOnSecondary, ModeReplaceAuto)
		if op.Mode == ModeReplaceNewSecondary && op.RemoteNode == "" {
			p.addf(field+".remote_node", "missing for %s", ModeReplaceNewSecondary)
		}
	case OpInstanceMigrate:
		if op.Mode != "" {
			oneOf(p, field+".mode", op.Mode, ModeMigrateLive, ModeMigrateNonLive)
		}
	case OpInstanceFailover:
		if op.Mode != "" {
			p.addf(field+".mode", "failover takes no mode (got %q)", op.Mode)
		}
	}
	if op.AllowFailover && op.OpID != OpInstanceMigrate {
		p.addf(field+".allow_failover", "only a migrate can fall back to a failover")
	}
}

func (j JobReleased) check(p *problems) {
	p.require("request", j.Request)
	j.Job.check(p, "job")
}

func (j JobCancelled) check(p *problems) {
	p.require("request", j.Request)
	nonNegative(p, "job", j.Job)
	p.require("reason", j.Reason)
}

func (j JobEnded) check(p *problems) {
	p.require("request", j.Request)
	nonNegative(p, "job", j.Job)
	oneOf(p, "status", j.Status, JobSuccess, JobError, JobCanceled)
}

// opRef checks the (request, job, index, node) that names a dispatched
// opcode; executors and views join on it.
func opRef(p *problems, request string, job, index int, node string) {
	p.require("request", request)
	nonNegative(p, "job", job)
	nonNegative(p, "index", index)
	p.require("node", node)
}

func (o OpcodeDispatched) check(p *problems) {
	opRef(p, o.Request, o.Job, o.Index, o.Node)
	o.Opcode.check(p, "opcode")
	o.Facts.check(p, "facts")
}

// check checks facts a dispatch carries, if any: an executor acts on
// them as it would on the inventory.
func (f *InstanceFacts) check(p *problems, field string) {
	if f == nil {
		return
	}
	p.require(field+".primary", f.Primary)
	oneOf(p, field+".storage", f.Storage, StorageKinds()...)
	oneOf(p, field+".run_state", f.RunState, RunRunning, RunStopped, RunOffline)
	nonNegative(p, field+".size.memory_mib", f.Size.MemoryMiB)
	nonNegative(p, field+".size.vcpus", f.Size.VCPUs)
}

func (o OpcodeStarted) check(p *problems) { opRef(p, o.Request, o.Job, o.Index, o.Node) }

func (o OpcodeCancelled) check(p *problems) {
	opRef(p, o.Request, o.Job, o.Index, o.Node)
	p.require("reason", o.Reason)
}

func (o OpcodeEnded) check(p *problems) {
	opRef(p, o.Request, o.Job, o.Index, o.Node)
	oneOf(p, "status", o.Status, JobSuccess, JobError, JobCanceled)
}

func (pr Progress) check(p *problems) {
	opRef(p, pr.Request, pr.Job, pr.Index, pr.Node)
	p.require("instance", pr.Instance)
	p.require("phase", pr.Phase)
	oneOf(p, "state", pr.State, ProgressRunning)
	nonNegative(p, "current", pr.Current)
	nonNegative(p, "total", pr.Total)
	nonNegative(p, "eta_seconds", pr.ETASeconds)
	nonNegative(p, "bytes_per_second", pr.BytesPerSecond)
	nonNegative(p, "duration_seconds", pr.DurationSeconds)
}

func (e End) check(p *problems) {
	opRef(p, e.Request, e.Job, e.Index, e.Node)
	p.require("instance", e.Instance)
	p.require("phase", e.Phase)
	oneOf(p, "state", e.State, EndPaused, EndSuccessful, EndFailed)
}

func (m MoveStatusReported) check(p *problems) {
	p.require("request", m.Request)
	p.require("instance", m.Instance)
	p.require("node", m.Node)
	oneOf(p, "status", m.Status,
		StatusMigrationSource, StatusMigrationDestination, StatusUp, StatusDown, StatusPaused)
}

func (a AuditRecorded) check(p *problems) {
	p.require("action", a.Action)
	p.require("subject", a.Subject)
	oneOf(p, "outcome", a.Outcome, AuditAllowed, AuditDenied)
}
