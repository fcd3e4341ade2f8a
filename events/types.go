package events

import "time"

// Payload is the typed body of an event. The interface is sealed (key and
// check are unexported) because this package is the only place that defines
// event types; everything else reads and writes these structs.
type Payload interface {
	// Type is the event type written into the envelope.
	Type() string
	// Version is the payload's schema version; a changed shape gets a new
	// version, never a changed meaning under the old one.
	Version() int
	// key is the partition key: what must be read in order.
	key() string
	// check appends every problem in the payload to p (see validate.go).
	check(p *problems)
}

// KeyOf is p's partition key (what must be read in order): the request of
// every event on drove.requests, the instance of every event about one
// instance's record or move (InstanceDeclared, Progress, MigrationStateChanged,
// ...), the node of what a node is sent or says.
func KeyOf(p Payload) string { return p.key() }

// Event types, grouped by the topic they are written to (see TopicOf).
const (
	// drove.inventory
	TypeGroupDeclared    = "group.declared"
	TypeNodeAnnounced    = "node.announced"
	TypeNodeUpdated      = "node.updated"
	TypeInstanceDeclared = "instance.declared"
	TypeInstancePlaced   = "instance.placed"

	// drove.requests
	TypeEvacuationRequested  = "evacuation.requested"
	TypeGroupChangeRequested = "group_change.requested"
	TypeRequestApproved      = "request.approved"
	TypeRequestCancelled     = "request.cancelled"
	TypeRequestRejected      = "request.rejected"
	TypeRequestFinished      = "request.finished"

	// drove.plans
	TypePlanComputed = "plan.computed"

	// drove.jobs
	TypeJobReleased  = "job.released"
	TypeJobCancelled = "job.cancelled"
	TypeJobEnded     = "job.ended"

	// drove.opcodes
	TypeOpcodeDispatched = "opcode.dispatched"
	TypeOpcodeStarted    = "opcode.started"
	TypeOpcodeEnded      = "opcode.ended"
	TypeOpcodeCancelled  = "opcode.cancelled"

	// drove.progress
	TypeProgress           = "move.progress"
	TypeEnd                = "move.end"
	TypeMoveStatusReported = "move.status_reported"

	// drove.audit
	TypeAuditRecorded = "audit.recorded"
)

// ---- Enumerations. Each has a fixed set checked on encode and decode: a
// value a consumer does not know is as dangerous as a type it does not know.

// AllocPolicy is a node group's allocation policy (Ganeti).
type AllocPolicy string

const (
	AllocPreferred   AllocPolicy = "preferred"
	AllocLastResort  AllocPolicy = "last_resort" // only when no preferred group fits
	AllocUnallocable AllocPolicy = "unallocable" // never a target
)

// StorageKind is an instance's disk template: Ganeti's, plus Drove's ZFS
// kinds. It decides how an instance can move (see MISSION.md, Domain).
type StorageKind string

const (
	StorageDRBD          StorageKind = "drbd"           // mirrored internally
	StorageZFSReplicated StorageKind = "zfs-replicated" // mirrored internally
	StorageRBD           StorageKind = "rbd"            // mirrored externally
	StorageSharedFile    StorageKind = "sharedfile"     // mirrored externally
	StorageExt           StorageKind = "ext"            // mirrored externally
	StorageGluster       StorageKind = "gluster"        // mirrored externally
	StorageBlockdev      StorageKind = "blockdev"       // mirrored externally
	StoragePlain         StorageKind = "plain"          // not mirrored
	StorageFile          StorageKind = "file"           // not mirrored
	StorageDiskless      StorageKind = "diskless"       // nothing to move
	StorageZFSLocal      StorageKind = "zfs-local"      // RFD 34 offline migration
)

// RunState is the state an instance is meant to be in.
type RunState string

const (
	RunRunning RunState = "running"
	RunStopped RunState = "stopped"
	RunOffline RunState = "offline"
)

// EvacMode is which instances a node evacuation moves (Ganeti).
type EvacMode string

const (
	EvacPrimaryOnly   EvacMode = "primary-only"
	EvacSecondaryOnly EvacMode = "secondary-only"
	EvacAll           EvacMode = "all"
)

// OpID names an opcode, spelled as Ganeti spells it.
type OpID string

const (
	OpInstanceMigrate      OpID = "OP_INSTANCE_MIGRATE"
	OpInstanceFailover     OpID = "OP_INSTANCE_FAILOVER"
	OpInstanceReplaceDisks OpID = "OP_INSTANCE_REPLACE_DISKS"
)

// Opcode modes. Replace-disks needs one; migrate may name one.
const (
	ModeReplaceNewSecondary = "replace_new_secondary"
	ModeReplaceOnPrimary    = "replace_on_primary"
	ModeReplaceOnSecondary  = "replace_on_secondary"
	ModeReplaceAuto         = "replace_auto"
	ModeMigrateLive         = "live"
	ModeMigrateNonLive      = "non-live"
)

// JobStatus is how a job or an opcode ended; job dependencies name them.
type JobStatus string

const (
	JobSuccess  JobStatus = "success"
	JobError    JobStatus = "error"
	JobCanceled JobStatus = "canceled"
)

// ProgressState is the state of a progress event; RFD 34 has one.
type ProgressState string

const ProgressRunning ProgressState = "running"

// EndState is the final state of an end event (RFD 34).
type EndState string

const (
	EndPaused     EndState = "paused"
	EndSuccessful EndState = "successful"
	EndFailed     EndState = "failed"
)

// Phases of a move as RFD 34 names them. Phase is a free string because
// drivers add their own steps (a live handover, a disk rebuild); views key
// on State, which is fixed.
const (
	PhaseBegin  = "begin"
	PhaseSync   = "sync"
	PhaseSwitch = "switch"
	// PhasePause is dispatched to a migration's source to stop its running
	// sync at once (it supersedes the sync); the executor ends it without
	// the driver, whose cancelled sync kept its last complete snapshot.
	PhasePause = "pause"
	// PhaseCancel is dispatched to a migration's source the planner
	// declared lost while a phase was owed there: it supersedes that
	// phase, and the executor ends it canceled without the driver, so a
	// source whose process starts again after the loss does not resume
	// the phase it owed (the fence of a lost node; an opcode's is
	// OpcodeCancelled).
	PhaseCancel = "cancel"
)

// NodeMoveStatus is what a node reports for an instance during and after a
// move, after oVirt: the views reconcile from these when an event is lost.
type NodeMoveStatus string

const (
	StatusMigrationSource      NodeMoveStatus = "migration source"
	StatusMigrationDestination NodeMoveStatus = "migration destination"
	StatusUp                   NodeMoveStatus = "up"
	StatusDown                 NodeMoveStatus = "down"
	StatusPaused               NodeMoveStatus = "paused" // post-copy source: no cancel any more
)

// AuditOutcome is the answer an audited decision gave.
type AuditOutcome string

const (
	AuditAllowed AuditOutcome = "allowed"
	AuditDenied  AuditOutcome = "denied"
)

// ---- Shared structures.

// Resources is an amount of node capacity.
type Resources struct {
	MemoryMiB int64 `json:"memory_mib"`
	DiskMiB   int64 `json:"disk_mib"`
	CPUs      int   `json:"cpus"`
	Spindles  int   `json:"spindles"`
}

// Size is what an instance needs from its nodes.
type Size struct {
	MemoryMiB int64   `json:"memory_mib"`
	VCPUs     int     `json:"vcpus"`
	DisksMiB  []int64 `json:"disks_mib"`
	Spindles  int     `json:"spindles"`
}

// NIC is an instance's network interface; RFD 34 swaps them on switch.
type NIC struct {
	MAC     string `json:"mac"`
	Network string `json:"network"`
}

// Moved is one instance a plan can move: (instance, target group, nodes).
type Moved struct {
	Instance string   `json:"instance"`
	Group    string   `json:"group"`
	Nodes    []string `json:"nodes"`
}

// Failed is one instance a plan cannot move, with the reason an operator
// will read.
type Failed struct {
	Instance string `json:"instance"`
	Reason   string `json:"reason"`
}

// Opcode is one step of a job, after Ganeti's serialized opcodes.
type Opcode struct {
	OpID       OpID   `json:"op_id"`
	Instance   string `json:"instance"`
	TargetNode string `json:"target_node,omitempty"`
	RemoteNode string `json:"remote_node,omitempty"` // replace-disks: the new secondary
	Mode       string `json:"mode,omitempty"`
	// AllowFailover lets a migrate fall back to a failover.
	AllowFailover bool `json:"allow_failover,omitempty"`
	// IgnoreConsistency lets a failover start the instance from its
	// replica when the primary is offline and cannot hand over.
	IgnoreConsistency bool `json:"ignore_consistency,omitempty"`
	// From and To are the nodes the opcode moves the instance or its data
	// from and to, as planned; the executor on From runs it.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Leaves is where op leaves its instance when it succeeds, Ganeti's
// meaning: migrate and failover make To the primary, and with internally
// mirrored storage the old primary (From) becomes the secondary (the two
// swap; To was the secondary, the only place the disks are), while any
// other storage has no secondary; replace-disks keeps From the primary and
// makes To the secondary. The executor records it (InstancePlaced) and
// the planner service dispatches the next opcode of a job from it.
func (op Opcode) Leaves(mirrored bool) (primary, secondary string) {
	switch {
	case op.OpID == OpInstanceReplaceDisks:
		return op.From, op.To
	case mirrored:
		return op.To, op.From
	default:
		return op.To, ""
	}
}

// Dependency makes a job wait for an earlier one. Job is relative, as in
// Ganeti: -1 is the job just before. The job runs once that job has ended in
// one of Statuses; an empty list means "ended in any status".
type Dependency struct {
	Job      int         `json:"job"`
	Statuses []JobStatus `json:"statuses"`
}

// Job is a list of opcodes run in order, after its dependencies.
type Job struct {
	Index   int          `json:"index"`
	Opcodes []Opcode     `json:"opcodes"`
	Depends []Dependency `json:"depends,omitempty"`
}

// ---- drove.inventory

// GroupDeclared declares a node group (a mobility domain) or restates it.
type GroupDeclared struct {
	Name        string      `json:"name"`
	AllocPolicy AllocPolicy `json:"alloc_policy"`
	Tags        []string    `json:"tags,omitempty"`
	// Policy is the group's instance policy; nil means Ganeti's default.
	Policy *InstancePolicy `json:"ipolicy,omitempty"`
	// ClusterTags are the tags of the cluster the group is in: Ganeti's
	// "htools:" cluster tags give node and instance tags their meaning
	// (exclusion, location, desired-location and migration tags). The
	// schema has no cluster object, so every group carries them; a seed
	// writes the same list on each, and the planner uses their union.
	ClusterTags []string `json:"cluster_tags,omitempty"`
}

// NodeAnnounced is a node's first statement of itself: its whole state.
type NodeAnnounced struct {
	Name  string    `json:"name"`
	Group string    `json:"group"`
	Total Resources `json:"total"`
	Free  Resources `json:"free"`
	// ReservedMemoryMiB is the memory the node keeps for itself (its
	// hypervisor and services): never given to instances.
	ReservedMemoryMiB int64 `json:"reserved_memory_mib,omitempty"`
	// SendBytesPerSecond and ReceiveBytesPerSecond are the node's link
	// bandwidth each way, what moves from and to it share; 0 (not
	// announced) is the planner's default (planner.DefaultLinkBytesPerSecond).
	SendBytesPerSecond    int64    `json:"send_bytes_per_second,omitempty"`
	ReceiveBytesPerSecond int64    `json:"receive_bytes_per_second,omitempty"`
	Offline               bool     `json:"offline"`
	Drained               bool     `json:"drained"`
	VMCapable             bool     `json:"vm_capable"`
	Tags                  []string `json:"tags,omitempty"`
}

// NodeUpdated restates a node's whole state, not a delta, so that applying
// it twice or after a lost update still leaves the view right.
type NodeUpdated NodeAnnounced

// InstanceDeclared declares an instance or restates its whole state.
type InstanceDeclared struct {
	Name          string      `json:"name"`
	Owner         string      `json:"owner"`
	Size          Size        `json:"size"`
	Storage       StorageKind `json:"storage"`
	RunState      RunState    `json:"run_state"`
	PrimaryNode   string      `json:"primary_node"`
	SecondaryNode string      `json:"secondary_node,omitempty"`
	NICs          []NIC       `json:"nics,omitempty"`
	Tags          []string    `json:"tags,omitempty"`
	// UserMigration overrides the global "owners may migrate" setting for
	// this instance; nil follows the global setting.
	UserMigration *bool `json:"user_migration,omitempty"`
	// MaxDowntimeMS is the instance's downtime budget: a migration of it
	// that asks for none is held to it, over the settings' budget. 0
	// follows the settings'.
	MaxDowntimeMS int64 `json:"max_downtime_ms,omitempty"`
}

// InstancePlaced records a placement change: where the instance was and
// where it is now. Request is empty for changes no request made.
type InstancePlaced struct {
	Instance          string `json:"instance"`
	Group             string `json:"group"`
	PrimaryNode       string `json:"primary_node"`
	SecondaryNode     string `json:"secondary_node,omitempty"`
	PreviousGroup     string `json:"previous_group"`
	PreviousPrimary   string `json:"previous_primary"`
	PreviousSecondary string `json:"previous_secondary,omitempty"`
	Request           string `json:"request,omitempty"`
}

// ---- drove.requests

// EvacuationRequested asks to move instances off nodes within their group.
type EvacuationRequested struct {
	Request          string   `json:"request"`
	Nodes            []string `json:"nodes"`
	Mode             EvacMode `json:"mode"`
	DryRun           bool     `json:"dry_run"`
	IgnoreSoftErrors bool     `json:"ignore_soft_errors"`
	// MaxMovesPerNode bounds concurrent moves off one node; 0 means the
	// service default.
	MaxMovesPerNode int `json:"max_moves_per_node"`
}

// GroupChangeRequested asks to move instances (all with primaries in one
// group) to any of TargetGroups; empty means any group but their own.
type GroupChangeRequested struct {
	Request      string   `json:"request"`
	Instances    []string `json:"instances"`
	TargetGroups []string `json:"target_groups"`
	// DryRun asks for the plan only; it runs once RequestApproved.
	DryRun bool `json:"dry_run,omitempty"`
}

// RequestApproved lets a request's plan be executed.
type RequestApproved struct {
	Request string `json:"request"`
}

// RequestCancelled stops a request: no new job is released after it.
type RequestCancelled struct {
	Request string `json:"request"`
}

// RequestRejected refuses a request before anything moved.
type RequestRejected struct {
	Request string `json:"request"`
	Reason  string `json:"reason"`
}

// RequestFinished closes a request. Moved and Failed together are exactly
// the request's instances (Ganeti's rule), now as they ended, not as planned.
type RequestFinished struct {
	Request string   `json:"request"`
	Moved   []Moved  `json:"moved"`
	Failed  []Failed `json:"failed"`
}

// ---- drove.plans

// PlanComputed is the planner's answer to a request, shaped like a Ganeti
// IAllocator result. Scores are Ganeti's cluster score (lower is better).
type PlanComputed struct {
	Request     string   `json:"request"`
	Moved       []Moved  `json:"moved"`
	Failed      []Failed `json:"failed"`
	Jobs        []Job    `json:"jobs"`
	ScoreBefore float64  `json:"score_before"`
	ScoreAfter  float64  `json:"score_after"`
	// A plan too large for one record is written as Parts events (see
	// SplitPlan), all in one transaction, sharing Plan (the first part's
	// event id). Part numbers them from 0; FirstJob is the index of the
	// part's first job. Moved, Failed and Jobs of the parts, joined in
	// part order, are the plan's; the scores are on every part. A plan in
	// one event leaves all four zero.
	Plan     string `json:"plan,omitempty"`
	Part     int    `json:"part,omitempty"`
	Parts    int    `json:"parts,omitempty"`
	FirstJob int    `json:"first_job,omitempty"`
}

// ---- drove.jobs

// JobReleased says a job's dependencies are met and its opcodes may be
// dispatched. It carries the job so the dispatcher needs no other state.
type JobReleased struct {
	Request string `json:"request"`
	Job     Job    `json:"job"`
}

// JobCancelled says a job will never run, and why.
type JobCancelled struct {
	Request string `json:"request"`
	Job     int    `json:"job"`
	Reason  string `json:"reason"`
}

// JobEnded says how a job ended; jobs that depend on it read Status.
type JobEnded struct {
	Request string    `json:"request"`
	Job     int       `json:"job"`
	Status  JobStatus `json:"status"`
	Error   string    `json:"error,omitempty"`
}

// ---- drove.opcodes (keyed by node)

// OpcodeDispatched hands opcode Index of job Job to the executor on Node.
type OpcodeDispatched struct {
	Request string `json:"request"`
	Job     int    `json:"job"`
	Index   int    `json:"index"`
	Node    string `json:"node"`
	Opcode  Opcode `json:"opcode"`
	// Facts are what the executor needs to know of the instance and the
	// nodes the opcode names, as the planner service's inventory holds
	// them when it dispatches (the placement the job's previous opcode
	// leaves, for the later opcodes of a job): the executor reads only its
	// node's partition of drove.opcodes, never the inventory. Absent in
	// dispatches older than the field; an executor ends those with an
	// error.
	Facts *InstanceFacts `json:"facts,omitempty"`
}

// InstanceFacts are an instance's facts as a dispatch carries them to an
// executor: its size, storage and run state, where it is, and the groups
// of the nodes involved.
type InstanceFacts struct {
	Size      Size        `json:"size"`
	Storage   StorageKind `json:"storage"`
	RunState  RunState    `json:"run_state"`
	Primary   string      `json:"primary"`
	Secondary string      `json:"secondary,omitempty"`
	// Groups maps each node the move names (its ends, the primary and
	// the secondary) to its group, for the placement the executor records.
	Groups map[string]string `json:"groups,omitempty"`
}

// OpcodeStarted is the executor's word that it began an opcode.
type OpcodeStarted struct {
	Request string `json:"request"`
	Job     int    `json:"job"`
	Index   int    `json:"index"`
	Node    string `json:"node"`
}

// OpcodeEnded is the executor's word on how an opcode ended.
type OpcodeEnded struct {
	Request string    `json:"request"`
	Job     int       `json:"job"`
	Index   int       `json:"index"`
	Node    string    `json:"node"`
	Status  JobStatus `json:"status"`
	Error   string    `json:"error,omitempty"`
}

// OpcodeCancelled asks the executor on Node to stop an opcode it was given:
// its request was cancelled. A running opcode aborts cleanly and ends with
// status canceled; one already ended is left as it ended.
type OpcodeCancelled struct {
	Request string `json:"request"`
	Job     int    `json:"job"`
	Index   int    `json:"index"`
	Node    string `json:"node"`
	Reason  string `json:"reason"`
}

// ---- drove.progress (keyed by instance)

// Progress is RFD 34's progress event for a move: what phase it is in and
// how far along. Request/Job/Index name the opcode doing the move.
type Progress struct {
	Request        string        `json:"request"`
	Job            int           `json:"job"`
	Index          int           `json:"index"`
	Instance       string        `json:"instance"`
	Node           string        `json:"node"`
	Phase          string        `json:"phase"`
	State          ProgressState `json:"state"`
	Current        int64         `json:"current"`
	Total          int64         `json:"total"`
	ETASeconds     float64       `json:"eta_seconds,omitempty"`
	BytesPerSecond int64         `json:"bytes_per_second,omitempty"`
	Message        string        `json:"message,omitempty"`
	Error          string        `json:"error,omitempty"`
	Started        time.Time     `json:"started,omitzero"`
	// DurationSeconds is how long the phase has taken so far.
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
}

// End is RFD 34's final event of a move's watch stream.
type End struct {
	Request  string   `json:"request"`
	Job      int      `json:"job"`
	Index    int      `json:"index"`
	Instance string   `json:"instance"`
	Node     string   `json:"node"`
	Phase    string   `json:"phase"`
	State    EndState `json:"state"`
	Message  string   `json:"message,omitempty"`
}

// MoveStatusReported is what one node says of an instance during or after a
// move (oVirt's model). Source and target report separately, in any order.
type MoveStatusReported struct {
	Request  string         `json:"request"`
	Instance string         `json:"instance"`
	Node     string         `json:"node"`
	Status   NodeMoveStatus `json:"status"`
}

// ---- drove.audit

// AuditRecorded keeps a decision that must be answerable later, such as an
// owner denied a migration.
type AuditRecorded struct {
	Action  string       `json:"action"`
	Subject string       `json:"subject"`
	Outcome AuditOutcome `json:"outcome"`
	Detail  string       `json:"detail,omitempty"`
}
