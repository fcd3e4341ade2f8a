package wire

import (
	"encoding/json"
	"time"
)

// InstanceMigration is RFD 34's migration record of a per-instance
// migration (kind instance).
type InstanceMigration struct {
	Kind string `db:"-" json:"kind" enum:"instance"`
	MigrationRecord
	Role          string     `db:"role" json:"role"`
	Owner         string     `db:"owner" json:"owner"`
	Target        string     `db:"target_node" json:"target_server,omitempty"`
	LastSyncBytes int64      `db:"last_sync_bytes" json:"last_sync_size"`
	ScheduledAt   *time.Time `db:"scheduled_at" json:"scheduled_timestamp,omitempty"`
	PriorRunState string     `db:"prior_run_state" json:"prior_run_state,omitempty"`
	Switched      bool       `db:"switched" json:"switched"`
	Finalized     bool       `db:"finalized" json:"finalized"`
	// the latest phase has not ended yet (a pause still stopping its
	// sync, say), so sync, switch, rollback and finalize are refused
	// until it has
	PhaseRunning   bool       `db:"phase_running" json:"phase_running"`
	UpdatedAt      *time.Time `db:"updated_at" json:"updated_timestamp,omitempty"`
	ETASeconds     float64    `db:"eta_seconds" json:"eta_seconds,omitempty"`
	BytesPerSecond int64      `db:"bytes_per_second" json:"transfer_bytes_second,omitempty"`
	// the latest switch's downtime in milliseconds: Drove's own figure
	// (from the stop to the target's start) and the workload's, read from
	// its own data on the target; absent before a switch
	DowntimeMS         int64 `db:"downtime_ms" json:"downtime_ms,omitempty"`
	WorkloadDowntimeMS int64 `db:"workload_downtime_ms" json:"workload_downtime_ms,omitempty"`
	// the switch's predicted downtime in milliseconds: the gateway's when
	// it accepted the migration, then the coordinator's after each sync
	// (for a switch then), the one the switch went ahead on
	PredictedDowntimeMS int64 `db:"predicted_downtime_ms" json:"predicted_downtime_ms,omitempty"`
	// the downtime budget in force, in milliseconds (the request's
	// max_downtime_ms, else the settings'); absent for none
	MaxDowntimeMS int64 `db:"max_downtime_ms" json:"max_downtime_ms,omitempty"`
	MigrationProgress
}

// Move is RFD 34's record of a move of a bulk request (kind opcode), as
// /v1/migrations lists it beside the per-instance migrations.
type Move struct {
	Kind    string `db:"-" json:"kind" enum:"opcode"`
	Request string `db:"request" json:"request"`
	Job     int    `db:"job" json:"job"`
	Index   int    `db:"idx" json:"index"`
	OpID    string `db:"op_id" json:"op_id"`
	MigrationRecord
	Target           string     `db:"target_node" json:"target_server"`
	EndState         string     `db:"end_state" json:"end_state,omitempty"`
	LastSyncBytes    int64      `db:"last_sync_bytes" json:"last_sync_bytes"`
	ProgressState    string     `db:"progress_state" json:"progress_state,omitempty"`
	ProgressEndState string     `db:"progress_end_state" json:"progress_end_state,omitempty"`
	ETASeconds       float64    `db:"eta_seconds" json:"eta_seconds"`
	BytesPerSecond   int64      `db:"bytes_per_second" json:"bytes_per_second"`
	ProgressTime     *time.Time `db:"progress_time" json:"progress_time,omitempty"`
	MigrationProgress
}

// MigrationRecord is what both kinds of migration record say of the
// migration: what moves, from where, and where it stands.
type MigrationRecord struct {
	ID        string `db:"id" json:"id"`
	Instance  string `db:"instance" json:"instance"`
	Account   string `db:"account" json:"account"`
	Source    string `db:"source_node" json:"source_server"`
	Automatic bool   `db:"automatic" json:"automatic"`
	State     string `db:"state" json:"state"`
	Phase     string `db:"phase" json:"phase"`
	Syncs     int    `db:"syncs" json:"num_sync_phases"`
}

// MigrationProgress is what both kinds of migration record say of its
// course: when, how far in bytes, how it went, and its progress events.
type MigrationProgress struct {
	CreatedAt    *time.Time `db:"created_at" json:"created_timestamp"`
	StartedAt    *time.Time `db:"started_at" json:"started_timestamp,omitempty"`
	FinishedAt   *time.Time `db:"finished_at" json:"finished_timestamp,omitempty"`
	CurrentBytes int64      `db:"current_bytes" json:"current_progress"`
	TotalBytes   int64      `db:"total_bytes" json:"total_progress"`
	Message      string     `db:"message" json:"message,omitempty"`
	Error        string     `db:"error" json:"error,omitempty"`
	ErrorDetail  string     `db:"error_detail" json:"error_detail,omitempty"`
	// the progress and end events, oldest first (one record read alone)
	History []ProgressRecord `db:"-" json:"progress_history,omitempty"`
}

// ProgressRecord is one progress or end event of a migration.
type ProgressRecord struct {
	Seq     int64           `db:"seq" json:"seq"`
	Time    time.Time       `db:"time" json:"time"`
	Type    string          `db:"type" json:"type"`
	Payload json.RawMessage `db:"payload" json:"payload"`
}

// MigrateBody is the optional body of POST /v1/instances/{name}/migrate;
// the same fields may come as query parameters.
type MigrateBody struct {
	// the node to move to; empty lets the planner choose
	Target   string   `json:"target,omitempty"`
	Affinity []string `json:"affinity,omitempty"`
	// action=schedule: when to switch
	ScheduledAt string `json:"scheduled_at,omitempty" format:"date-time"`
	// begin, automatic, schedule and estimate: the downtime budget in
	// milliseconds, over the settings' (absent or 0 follows them); the
	// migration does not switch while its predicted downtime is over it
	MaxDowntimeMS *int64 `json:"max_downtime_ms,omitempty" minimum:"0"`
	Reason        string `json:"reason,omitempty"`
}

// MigrateAnswer is the answer to an accepted action.
type MigrateAnswer struct {
	Migration string `json:"migration"`
	Instance  string `json:"instance"`
	Action    string `json:"action"`
	Status    string `json:"status"`
	Message   string `json:"message,omitempty"`
	Links     Links  `json:"links"`
}

// Estimate is the answer to action=estimate: how long a migration would
// take.
type Estimate struct {
	TotalSeconds    float64 `json:"total_seconds"`
	DowntimeSeconds float64 `json:"downtime_seconds"`
	Bytes           int64   `json:"bytes"`
	// where each input came from
	How            string  `json:"how"`
	DataBytes      int64   `json:"data_bytes"`
	LinkBytesPerS  int64   `json:"link_bytes_per_second"`
	DirtyBytesPerS int64   `json:"dirty_bytes_per_second"`
	Syncs          int     `json:"syncs"`
	SendMbpsLimit  float64 `json:"send_mbps_limit,omitempty"`
	// the parts of DowntimeSeconds
	Downtime DowntimeParts `json:"downtime"`
	// the downtime budget in force (max_downtime_ms asked, else the
	// settings'), in milliseconds; absent for none
	MaxDowntimeMS int64 `json:"max_downtime_ms,omitempty"`
}

// DowntimeParts are what a predicted downtime is built from (one model,
// planner/downtime's, for estimates and the downtime budget).
type DowntimeParts struct {
	// the switch's stop and start: measured on earlier switches,
	// else the stated default
	OverheadMS int64 `json:"overhead_ms"`
	// the final delta sent while the instance is down, at the link's rate
	TransferMS      int64 `json:"transfer_ms"`
	FinalDeltaBytes int64 `json:"final_delta_bytes"`
	// the check of the final delta (copied disks only)
	ChecksumMS int64 `json:"checksum_ms"`
}

// SettingsBody is PUT /v1/settings: any subset of the settings; absent
// (or null) fields keep their value. The answer is the whole settings in
// force, events.SettingsChanged.
type SettingsBody struct {
	AllowUserMigrations         *bool    `json:"allow_user_migrations,omitempty"`
	MaxRunningMigrationsPerNode *int     `json:"max_running_migrations_per_node,omitempty" minimum:"1" maximum:"2147483647"`
	SendMbpsLimit               *float64 `json:"send_mbps_limit,omitempty" minimum:"0"`
	ResyncMaxBytes              *int64   `json:"resync_max_bytes,omitempty" minimum:"0"`
	ResyncMaxSyncs              *int     `json:"resync_max_syncs,omitempty" minimum:"1" maximum:"2147483647"`
	ResyncShrinkWindow          *int     `json:"resync_shrink_window,omitempty" minimum:"1" maximum:"2147483647"`
	ProgressTimeoutSeconds      *int     `json:"progress_timeout_seconds,omitempty" minimum:"1" maximum:"2147483647"`
	FinalizeGraceSeconds        *int     `json:"finalize_grace_seconds,omitempty" minimum:"0" maximum:"2147483647"`
	MaxDowntimeMS               *int64   `json:"max_downtime_ms,omitempty" minimum:"0" maximum:"2147483647"`
	Reason                      string   `json:"reason,omitempty"`
}

// UserMigration is PUT /v1/instances/{name}/user-migration: true or
// false overrides the global setting for the instance, null follows it.
// Allowed must be present.
type UserMigration struct {
	Allowed *bool  `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
}

// InstanceBudget is PUT /v1/instances/{name}/max-downtime: the
// instance's own downtime budget in milliseconds. A migration of the
// instance that asks for no budget (max_downtime_ms) is held to it, over
// the settings' max_downtime_ms; 0 follows the settings'. MaxDowntimeMS
// must be present.
type InstanceBudget struct {
	MaxDowntimeMS int64  `json:"max_downtime_ms" minimum:"0" maximum:"2147483647"`
	Reason        string `json:"reason,omitempty"`
}

// InstanceChanged is the answer to a change of an instance's declaration
// (user-migration, max-downtime, stop, start).
type InstanceChanged struct {
	Instance      string `json:"instance"`
	Status        string `json:"status"`
	Message       string `json:"message"`
	RunState      string `json:"run_state"`
	UserMigration *bool  `json:"user_migration"`
	// the instance's own downtime budget; 0 follows the settings'
	MaxDowntimeMS int64 `json:"max_downtime_ms"`
}
