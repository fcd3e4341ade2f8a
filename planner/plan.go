package planner

// OpKind names an opcode the way Ganeti does.
type OpKind string

const (
	OpMigrate      OpKind = "OP_INSTANCE_MIGRATE"
	OpFailover     OpKind = "OP_INSTANCE_FAILOVER"
	OpReplaceDisks OpKind = "OP_INSTANCE_REPLACE_DISKS"
)

// ReplaceNewSecondary is the replace-disks mode that builds a new replica on
// another node.
const ReplaceNewSecondary = "replace_new_secondary"

// Opcode is one step of a job.
type Opcode struct {
	Kind     OpKind
	Instance string
	// TargetNode, for migrate and failover, is where the instance goes when
	// it is not simply its secondary (shared or copied storage).
	TargetNode string
	// RemoteNode, for replace-disks, is the new secondary.
	RemoteNode string
	// Mode, for replace-disks, is ReplaceNewSecondary.
	Mode string
	// AllowFailover lets a migrate opcode fall back to a failover.
	AllowFailover bool
	// IgnoreConsistency lets a failover proceed from an offline primary.
	IgnoreConsistency bool

	// From and To are the nodes the opcode moves the instance or its data
	// from and to; executors use them, Ganeti does not.
	From string
	To   string
}

// JobStatus is how a job ended.
type JobStatus string

const (
	StatusSuccess  JobStatus = "success"
	StatusError    JobStatus = "error"
	StatusCanceled JobStatus = "canceled"
)

// Dependency makes a job wait for an earlier one.
type Dependency struct {
	// Job is the index in Plan.Jobs of the job waited for; always earlier.
	Job int
	// Statuses are the end statuses that let the waiting job run; empty
	// means any end. A job waiting on another's freed memory or disk needs
	// success; a job waiting only for a free move slot accepts any end.
	Statuses []JobStatus
}

// Job is a list of opcodes run in order for one instance.
type Job struct {
	Instance string
	Opcodes  []Opcode
	Depends  []Dependency
}

// Moved is an instance the plan moves: its group and nodes afterwards
// (primary first).
type Moved struct {
	Instance string
	Group    string
	Nodes    []string
}

// Allocated is a new instance the plan places: its group and nodes
// (primary first).
type Allocated struct {
	Instance string
	Group    string
	Nodes    []string
	// Hail is hail's account of the choice ("Selected group: ...").
	Hail string
}

// Failed is an instance the plan cannot move, with the reason.
type Failed struct {
	Instance string
	Reason   string
	// Hail is the failure in hail's words and counts ("Group g1
	// (preferred): No valid allocation solutions, failure reasons:
	// FailDisk: 1"), which Ganeti's answers carry; Reason is Drove's
	// fuller explanation.
	Hail string
}

// Plan is the planner's answer. Moved and Failed together hold every
// requested instance exactly once; Jobs[i] moves Moved instances in the
// order they were decided.
type Plan struct {
	Moved  []Moved
	Failed []Failed
	Jobs   []Job
	// Score is Ganeti's cluster score (lower is better) before and after
	// the plan, for the whole cluster and for each group the plan touches.
	ScoreBefore float64
	ScoreAfter  float64
	Groups      []GroupScore
	// EvacuatedNodes are the nodes the plan empties (given or inferred).
	EvacuatedNodes []string
	// Allocated, for Allocate and MultiAllocate, are the new instances
	// placed, in request order; the others are in Failed.
	Allocated []Allocated
	// Relocated, for a successful Relocate, is the node that replaces the
	// one the instance left, as Ganeti's result lists it; for a successful
	// AllocateSecondary, the new secondary.
	Relocated []string
	// Log explains an allocation: the group chosen and, for every group
	// tried, its best score or why nothing fitted.
	Log []string
	// Hail, for a successful AllocateSecondary, is hail's account of the
	// choice ("score: ..., successes 2, failures 0 () for node(s) a/b").
	Hail string
}

// GroupScore is one group's cluster score before and after a plan.
type GroupScore struct {
	Group  string
	Before float64
	After  float64
}
