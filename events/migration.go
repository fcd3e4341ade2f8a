package events

import "time"

// Per-instance migrations (Triton RFD 34) and the settings that govern
// them. A migration moves one instance in phases (begin, sync any number of
// times, switch), each phase run on demand or automatically; its identity
// is a migration id, and its progress and end events are the ordinary
// Progress and End events with Request = the migration id, Job = 0 and
// Index = the phase's sequence number within the migration.

// Topics of migrations and settings.
const (
	// TopicMigrations holds what was asked of each migration and every
	// change of its state, keyed by instance name: an instance has at most
	// one migration at a time, so its history is in order.
	TopicMigrations = "drove.migrations"
	// TopicSettings holds the operators' settings, keyed "settings": the
	// latest event is the settings in force.
	TopicSettings = "drove.settings"
)

// Event types of migrations and settings.
const (
	TypeMigrationActionRequested = "migration.action_requested"
	TypeMigrationStateChanged    = "migration.state_changed"
	TypeMigrationPhaseDispatched = "migration.phase_dispatched"
	TypeMigrationPhaseEnded      = "migration.phase_ended"
	TypeReceiverReady            = "opcode.receiver_ready"
	TypeTargetNotified           = "opcode.target_notified"
	TypeSettingsChanged          = "settings.changed"
)

// MigrationAction is what a caller asks of a migration (RFD 34's actions).
type MigrationAction string

const (
	ActionBegin     MigrationAction = "begin"
	ActionSync      MigrationAction = "sync"
	ActionSwitch    MigrationAction = "switch"
	ActionAutomatic MigrationAction = "automatic"
	ActionAbort     MigrationAction = "abort"
	ActionPause     MigrationAction = "pause"
	ActionRollback  MigrationAction = "rollback"
	ActionFinalize  MigrationAction = "finalize"
	ActionSchedule  MigrationAction = "schedule"
)

// MigrationState is a migration record's state (RFD 34), plus queued: a
// migration waiting for a free slot on its node.
type MigrationState string

const (
	MigrationQueued     MigrationState = "queued"
	MigrationScheduled  MigrationState = "scheduled"
	MigrationRunning    MigrationState = "running"
	MigrationPaused     MigrationState = "paused"
	MigrationAborted    MigrationState = "aborted"
	MigrationFailed     MigrationState = "failed"
	MigrationSuccessful MigrationState = "successful"
)

// Role is a caller's role: operators may do anything; owners only what the
// settings allow on their own instances.
type Role string

const (
	RoleOperator Role = "operator"
	RoleOwner    Role = "owner"
)

// MigrationActionRequested is a caller's command to a migration, appended
// by the gateway once the caller was found allowed. Migration is new for
// begin, automatic and schedule and the existing id otherwise.
type MigrationActionRequested struct {
	Migration string          `json:"migration"`
	Instance  string          `json:"instance"`
	Action    MigrationAction `json:"action"`
	// Target is the node asked for (begin, automatic, schedule); empty
	// lets the planner choose.
	Target string `json:"target,omitempty"`
	// Affinity hints where the target should (or should not) be, in
	// Triton's syntax; informational where the planner ignores it.
	Affinity []string `json:"affinity,omitempty"`
	// ScheduledAt is when a scheduled migration switches.
	ScheduledAt *time.Time `json:"scheduled_at,omitempty"`
	Account     string     `json:"account"`
	Role        Role       `json:"role"`
	// MaxDowntimeMS is the downtime budget asked for this migration
	// (begin, automatic, schedule); 0 follows the settings'.
	MaxDowntimeMS int64 `json:"max_downtime_ms,omitempty"`
	// Downtime is the gateway's prediction of the switch's downtime when
	// it accepted the migration, and what it was built from; the
	// coordinator predicts again from it and the syncs' sizes and rates.
	Downtime *DowntimeBasis `json:"downtime,omitempty"`
}

// DowntimeBasis is a downtime prediction made before a move
// (planner/downtime's model) and the measured parts it kept for later
// ones: what does not depend on the final delta's size.
type DowntimeBasis struct {
	PredictedMS int64 `json:"predicted_ms"`
	// OverheadMS is the switch's stop and start: measured on
	// earlier switches, else the stated default.
	OverheadMS int64 `json:"overhead_ms"`
	// LinkBytesPerSecond is the link rate the prediction used, until the
	// migration's own syncs measure one.
	LinkBytesPerSecond int64 `json:"link_bytes_per_second"`
	// ChecksumBytesPerSecond is how fast the switch checks its delta; 0
	// for a move that checks none.
	ChecksumBytesPerSecond int64 `json:"checksum_bytes_per_second,omitempty"`
}

// MigrationStateChanged is the migration coordinator's record of a
// migration: its whole state after a change, so the views need no history
// to show it.
type MigrationStateChanged struct {
	Migration     string         `json:"migration"`
	Instance      string         `json:"instance"`
	Account       string         `json:"account"`
	Role          Role           `json:"role"`
	Source        string         `json:"source"`
	Target        string         `json:"target,omitempty"`
	Automatic     bool           `json:"automatic"`
	State         MigrationState `json:"state"`
	Phase         string         `json:"phase"`
	Syncs         int            `json:"syncs"`
	LastSyncBytes int64          `json:"last_sync_bytes"`
	ScheduledAt   *time.Time     `json:"scheduled_at,omitempty"`
	// PriorRunState is the instance's run state before begin, which abort
	// restores.
	PriorRunState RunState `json:"prior_run_state,omitempty"`
	// Switched says the switch committed: the instance runs on Target and
	// the source copy is kept until finalize (rollback returns to it).
	Switched  bool `json:"switched,omitempty"`
	Finalized bool `json:"finalized,omitempty"`
	// DowntimeMS and WorkloadDowntimeMS are the latest switch's (or
	// rollback's) downtime: Drove's own figure and the workload's
	// (MigrationPhaseEnded's); 0 before one, or without a figure.
	DowntimeMS         int64 `json:"downtime_ms,omitempty"`
	WorkloadDowntimeMS int64 `json:"workload_downtime_ms,omitempty"`
	// PredictedDowntimeMS is the switch's predicted downtime: the
	// gateway's at the request, then the coordinator's after each sync
	// (for a switch now); the switch went ahead on the last one.
	PredictedDowntimeMS int64 `json:"predicted_downtime_ms,omitempty"`
	// MaxDowntimeMS is the downtime budget in force at the latest
	// decision (the request's, else the settings'); 0 for none.
	MaxDowntimeMS int64 `json:"max_downtime_ms,omitempty"`
	// PhaseRunning says the latest dispatched phase has not ended: no next
	// phase can be asked for yet. State alone cannot say it: a pause makes
	// the record paused at once, while its phase still stops the send.
	PhaseRunning bool   `json:"phase_running,omitempty"`
	Message      string `json:"message,omitempty"`
	Error        string `json:"error,omitempty"`
	// ErrorDetail says what an operator must do, such as when the source
	// node is gone.
	ErrorDetail string `json:"error_detail,omitempty"`
}

// MigrationPhaseDispatched asks the executor on Node to run one phase of a
// migration. Seq numbers the migration's phases from 0; progress events of
// the phase carry it as their Index.
type MigrationPhaseDispatched struct {
	Migration string `json:"migration"`
	Instance  string `json:"instance"`
	Node      string `json:"node"`
	Seq       int    `json:"seq"`
	// Phase is begin, sync, switch, abort, rollback or finalize.
	Phase  string `json:"phase"`
	Source string `json:"source"`
	Target string `json:"target"`
	// Sync is the sync pass number (1 for the full send).
	Sync int `json:"sync,omitempty"`
	// SendMbps caps the send rate; 0 means no cap.
	SendMbps float64 `json:"send_mbps,omitempty"`
	// MaxDowntimeMS is the migration's downtime budget (switch only; 0
	// for none): a live switch plans its pause within it.
	MaxDowntimeMS int64 `json:"max_downtime_ms,omitempty"`
	// Facts are the instance's facts as the coordinator's inventory held
	// them (OpcodeDispatched.Facts): the executors read no inventory.
	Facts *InstanceFacts `json:"facts,omitempty"`
}

// MigrationPhaseEnded is the executor's word on a phase.
type MigrationPhaseEnded struct {
	Migration string    `json:"migration"`
	Instance  string    `json:"instance"`
	Node      string    `json:"node"`
	Seq       int       `json:"seq"`
	Phase     string    `json:"phase"`
	Status    JobStatus `json:"status"`
	// Bytes sent in the phase (a sync's size decides the next step).
	Bytes int64 `json:"bytes"`
	// DowntimeMS is how long the instance did not run (switch).
	DowntimeMS int64 `json:"downtime_ms,omitempty"`
	// WorkloadDowntimeMS is the switch's downtime as the instance's own
	// workload saw it: the gap in the timeline it writes with its data,
	// from its last write on the source to its first on the target, read
	// on the target after the move. 0 when its workload keeps none.
	WorkloadDowntimeMS int64 `json:"workload_downtime_ms,omitempty"`
	// OverheadMS is the part of the downtime (the workload's when it saw
	// more) that was not the final delta's bytes at the link's rate or
	// its check (the stop and the start, the final send's setup), as the
	// driver timed it; 0 when the driver does not split its downtime.
	// Later predictions read it.
	OverheadMS int64 `json:"overhead_ms,omitempty"`
	// AtSwitchPoint says a sync ended with the instance stopped at the
	// switch point (a live pre-copy that had nothing left dirty stops the
	// guest there): it is down until the switch, which follows at once.
	AtSwitchPoint bool   `json:"at_switch_point,omitempty"`
	Error         string `json:"error,omitempty"`
}

// ReceiverReady is the target side of a move saying where it listens, so
// the source can connect: the two sides of a move are separate flows
// matched by the opcode's key, and either may start first. Node is the
// source node it is addressed to.
type ReceiverReady struct {
	Request string `json:"request"`
	Job     int    `json:"job"`
	Index   int    `json:"index"`
	Node    string `json:"node"`
	Target  string `json:"target"`
	Addr    string `json:"addr"`
}

// TargetNotified carries to the executor of a move's target node an event
// of drove.opcodes that is keyed by (so lies in the partition of) the
// source node: the dispatch of an opcode or of a migration phase that
// moves an instance onto Node, and its end. Each executor reads only its
// own node's partition of drove.opcodes, so the source's executor relays,
// in the transactions it writes anyway (the opcode's start and end, the
// phase's end), what the target side must see. Event is the relayed event,
// whole and unchanged. A placement that leaves a node without the replica
// it held (InstancePlaced, from drove.inventory) is relayed to that node
// the same way, so its executor drops the replica without reading the
// inventory.
type TargetNotified struct {
	Node  string   `json:"node"`
	Event Envelope `json:"event"`
}

// SettingsChanged is the whole set of operator settings in force from now.
type SettingsChanged struct {
	// AllowUserMigrations lets owners migrate their own instances;
	// InstanceDeclared.UserMigration overrides it per instance.
	AllowUserMigrations bool `json:"allow_user_migrations"`
	// MaxRunningMigrationsPerNode bounds migrations running off one node;
	// more wait, queued, in creation order.
	MaxRunningMigrationsPerNode int `json:"max_running_migrations_per_node"`
	// SendMbpsLimit caps a migration's send rate; 0 means no cap.
	SendMbpsLimit float64 `json:"send_mbps_limit"`
	// The re-sync rule: switch when the last sync sent less than
	// ResyncMaxBytes, after ResyncMaxSyncs syncs, or when the size stopped
	// shrinking over the last ResyncShrinkWindow syncs.
	ResyncMaxBytes     int64 `json:"resync_max_bytes"`
	ResyncMaxSyncs     int   `json:"resync_max_syncs"`
	ResyncShrinkWindow int   `json:"resync_shrink_window"`
	// ProgressTimeoutSeconds marks a migration stalled when no progress
	// came for that long (KubeVirt's default 150).
	ProgressTimeoutSeconds int `json:"progress_timeout_seconds"`
	// FinalizeGraceSeconds finalizes a switched migration on its own after
	// that long; 0 waits for an explicit finalize.
	FinalizeGraceSeconds int `json:"finalize_grace_seconds"`
	// MaxDowntimeMS is the downtime budget of every migration that asks
	// for none (max_downtime_ms): a migration does not switch while its
	// predicted downtime is over it. 0 means no budget.
	MaxDowntimeMS int64 `json:"max_downtime_ms"`
}

// DefaultSettings are the settings before any SettingsChanged.
func DefaultSettings() SettingsChanged {
	return SettingsChanged{
		MaxRunningMigrationsPerNode: 2,
		ResyncMaxBytes:              50 << 20,
		ResyncMaxSyncs:              10,
		ResyncShrinkWindow:          3,
		ProgressTimeoutSeconds:      150,
		FinalizeGraceSeconds:        3600,
	}
}

func (MigrationActionRequested) Type() string  { return TypeMigrationActionRequested }
func (MigrationActionRequested) Version() int  { return 1 }
func (p MigrationActionRequested) key() string { return p.Instance }
func (MigrationStateChanged) Type() string     { return TypeMigrationStateChanged }
func (MigrationStateChanged) Version() int     { return 1 }
func (p MigrationStateChanged) key() string    { return p.Instance }
func (MigrationPhaseDispatched) Type() string  { return TypeMigrationPhaseDispatched }
func (MigrationPhaseDispatched) Version() int  { return 1 }
func (p MigrationPhaseDispatched) key() string { return p.Node }
func (MigrationPhaseEnded) Type() string       { return TypeMigrationPhaseEnded }
func (MigrationPhaseEnded) Version() int       { return 1 }
func (p MigrationPhaseEnded) key() string      { return p.Node }
func (ReceiverReady) Type() string             { return TypeReceiverReady }
func (ReceiverReady) Version() int             { return 1 }
func (p ReceiverReady) key() string            { return p.Node }
func (TargetNotified) Type() string            { return TypeTargetNotified }
func (TargetNotified) Version() int            { return 1 }
func (p TargetNotified) key() string           { return p.Node }
func (SettingsChanged) Type() string           { return TypeSettingsChanged }
func (SettingsChanged) Version() int           { return 1 }
func (SettingsChanged) key() string            { return "settings" }

func (m MigrationActionRequested) check(p *problems) {
	p.require("migration", m.Migration)
	p.require("instance", m.Instance)
	oneOf(p, "action", m.Action, ActionBegin, ActionSync, ActionSwitch, ActionAutomatic,
		ActionAbort, ActionPause, ActionRollback, ActionFinalize, ActionSchedule)
	p.require("account", m.Account)
	oneOf(p, "role", m.Role, RoleOperator, RoleOwner)
	if m.Action == ActionSchedule && m.ScheduledAt == nil {
		p.addf("scheduled_at", "required for a scheduled migration")
	}
	downtimeBudget(p, "max_downtime_ms", m.MaxDowntimeMS)
}

func (m MigrationStateChanged) check(p *problems) {
	p.require("migration", m.Migration)
	p.require("instance", m.Instance)
	p.require("source", m.Source)
	oneOf(p, "state", m.State, MigrationQueued, MigrationScheduled, MigrationRunning,
		MigrationPaused, MigrationAborted, MigrationFailed, MigrationSuccessful)
	nonNegative(p, "syncs", m.Syncs)
}

func (m MigrationPhaseDispatched) check(p *problems) {
	p.require("migration", m.Migration)
	p.require("instance", m.Instance)
	p.require("node", m.Node)
	p.require("source", m.Source)
	nonNegative(p, "seq", m.Seq)
	oneOf(p, "phase", m.Phase, "begin", "sync", "switch", "pause", "abort", "rollback", "finalize", PhaseCancel)
	m.Facts.check(p, "facts")
}

func (m MigrationPhaseEnded) check(p *problems) {
	p.require("migration", m.Migration)
	p.require("instance", m.Instance)
	p.require("node", m.Node)
	nonNegative(p, "seq", m.Seq)
	p.require("phase", m.Phase)
	oneOf(p, "status", m.Status, JobSuccess, JobError, JobCanceled)
}

func (t TargetNotified) check(p *problems) {
	p.require("node", t.Node)
	oneOf(p, "event.type", t.Event.Type, TypeOpcodeDispatched, TypeOpcodeEnded,
		TypeMigrationPhaseDispatched, TypeMigrationPhaseEnded, TypeInstancePlaced)
	if _, err := Encode(t.Event); err != nil {
		p.addf("event", "%v", err)
	}
}

func (r ReceiverReady) check(p *problems) {
	opRef(p, r.Request, r.Job, r.Index, r.Node)
	p.require("target", r.Target)
	p.require("addr", r.Addr)
}

func (s SettingsChanged) check(p *problems) {
	viewInt(p, "max_running_migrations_per_node", s.MaxRunningMigrationsPerNode)
	viewInt(p, "resync_max_syncs", s.ResyncMaxSyncs)
	viewInt(p, "resync_shrink_window", s.ResyncShrinkWindow)
	viewInt(p, "progress_timeout_seconds", s.ProgressTimeoutSeconds)
	viewInt(p, "finalize_grace_seconds", s.FinalizeGraceSeconds)
	if s.MaxRunningMigrationsPerNode < 1 {
		p.addf("max_running_migrations_per_node", "must be at least 1")
	}
	if s.SendMbpsLimit < 0 {
		p.addf("send_mbps_limit", "must not be negative")
	}
	if s.ResyncMaxSyncs < 1 {
		p.addf("resync_max_syncs", "must be at least 1")
	}
	if s.ResyncShrinkWindow < 1 {
		p.addf("resync_shrink_window", "must be at least 1")
	}
	if s.ProgressTimeoutSeconds < 1 {
		p.addf("progress_timeout_seconds", "must be at least 1")
	}
	if s.FinalizeGraceSeconds < 0 {
		p.addf("finalize_grace_seconds", "must not be negative")
	}
	downtimeBudget(p, "max_downtime_ms", s.MaxDowntimeMS)
}
