package wire

import (
	"encoding/json"
	"time"
)

// HistoryEntry is one event of a history (GET /v1/history/{kind}/{id})
// and what it changed.
type HistoryEntry struct {
	// the cursor: pass as ?after=
	Seq int64 `json:"seq"`
	// event id
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	// event type
	Type      string `json:"type"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Producer  string `json:"producer"`
	// Actor and Why are the event's reason trail.
	Actor string `json:"actor"`
	Why   string `json:"why"`
	// who first asked for its request or migration: the operator or
	// owner the planner quotes
	Requester    string `json:"requester,omitempty"`
	RequesterWhy string `json:"requester_why,omitempty"`
	// Request or Migration is what the event belongs to.
	Request   string `json:"request,omitempty"`
	Migration string `json:"migration,omitempty"`
	Instance  string `json:"instance,omitempty"`
	// what changed, in a line
	Summary string     `json:"summary"`
	Before  *Placement `json:"placement_before,omitempty"`
	After   *Placement `json:"placement_after,omitempty"`
	From    string     `json:"state_before,omitempty"`
	To      string     `json:"state_after,omitempty"`
	// the event's payload as logged
	Payload json.RawMessage `json:"payload"`
}

// Placement is where an instance is: its group and nodes.
type Placement struct {
	Group     string `json:"group,omitempty"`
	Primary   string `json:"primary"`
	Secondary string `json:"secondary,omitempty"`
}

// AuditEntry is one line of the audit trail (GET /v1/audit): who asked
// what, why, and how it was answered.
type AuditEntry struct {
	// the cursor: pass as ?after=
	Seq int64 `json:"seq"`
	// event id
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	// event type: an ask's, or audit.recorded
	Type string `json:"type"`
	// who asked: the reason trail's actor, or the refused caller's account name
	Actor string `json:"actor"`
	// an audit record's caller with its role, e.g. 'alice (owner)'
	Account string `json:"account,omitempty"`
	// what was asked, in a line (a refusal's: METHOD path)
	Action string `json:"action"`
	// the reason given; a refusal's: why it was refused
	Why     string `json:"why"`
	Outcome string `json:"outcome" enum:"requested,allowed,denied"`
	// the audit record's detail
	Detail string `json:"detail,omitempty"`
	// refusals this entry stands for: more than 1 when the refusal budget
	// folded them
	Count int `json:"count" minimum:"1"`
	// the request or migration it belongs to
	Request string `json:"request,omitempty"`
}

// WatchLine is one line of a request's or an instance's watch stream
// (application/x-ndjson): an event, or a control line (type keepalive,
// end or error; an error line carries Error).
type WatchLine struct {
	Seq      int64           `json:"seq"`
	Time     time.Time       `json:"time"`
	Type     string          `json:"type"`
	Request  string          `json:"request"`
	Instance string          `json:"instance"`
	Payload  json.RawMessage `json:"payload"`
	// the job rows this event changed, as the gateway's fold of the
	// request's stream made them (gateway/progress); only on a request's
	// stream asked with ?rows=jobs
	Jobs []JobRow `json:"jobs,omitempty"`
}

// JobRow is one job of a request as its watch stream folds it: what
// `drove watch` and the console draw as one row.
type JobRow struct {
	Index    int    `json:"index"`
	Instance string `json:"instance"`
	// waiting (planned), queued (released), running, success, error or
	// canceled
	State string `json:"state" enum:"waiting,queued,running,success,error,canceled"`
	// opcodes of the job
	Ops int `json:"ops"`
	// opcode underway, 1-based; 0 before the first
	Op int `json:"op"`
	// the opcode underway as a person reads it, e.g. migrate → node-b2
	OpName string `json:"op_name"`
	// phase the opcode underway reported last
	Phase string `json:"phase"`
	// bytes of the opcode underway sent so far
	Current int64 `json:"current"`
	// bytes the opcode underway sends in all (0: not known, or none)
	Total int64 `json:"total"`
	// the executor's own estimate of the opcode's time left
	ETASeconds float64 `json:"eta_seconds"`
	// the opcode underway's rate, as its executor reported it
	BytesPerSecond int64 `json:"bytes_per_second"`
	// the last report, or why the job failed or was cancelled
	Message string `json:"message"`
	// bytes the job's finished opcodes moved (opcodes that move no data,
	// such as a failover, add nothing)
	DoneBytes int64 `json:"done_bytes"`
	// what the job has moved: its finished opcodes' bytes and the opcode
	// underway's so far
	BytesDone int64 `json:"bytes_done"`
	// what the job is known to move: its finished opcodes' bytes and all
	// of the opcode underway's
	BytesTotal int64 `json:"bytes_total"`
	// how far the job is: from bytes where its opcodes report bytes, else
	// from the count of opcodes done; 100 only when it succeeded
	Percent float64 `json:"percent"`
	// the job's time left: the executor's estimate, else from bytes and
	// rate; 0 when not running or not known
	RemainingSeconds float64 `json:"remaining_seconds"`
}

// ControlLine is a stream line that is not an event: a keepalive, the
// end, or the error that ends a stream early.
type ControlLine struct {
	Type  string `json:"type" enum:"keepalive,end,error"`
	Error *Error `json:"error,omitempty"`
}

// MigrationLine is one line of a migration's watch stream, in RFD 34's
// words.
type MigrationLine struct {
	Type      string     `json:"type" enum:"progress,end"`
	Migration string     `json:"migration"`
	Instance  string     `json:"instance"`
	Seq       int64      `json:"seq"`
	Time      time.Time  `json:"time"`
	Index     int        `json:"index"`
	Node      string     `json:"node,omitempty"`
	Phase     string     `json:"phase"`
	State     string     `json:"state"`
	Current   *int64     `json:"current_progress,omitempty"`
	Total     *int64     `json:"total_progress,omitempty"`
	Percent   *float64   `json:"percent,omitempty"`
	Message   string     `json:"message,omitempty"`
	Error     string     `json:"error,omitempty"`
	Started   *time.Time `json:"started_timestamp,omitempty"`
	Duration  int64      `json:"duration_ms,omitempty"`
	ETA       int64      `json:"eta_ms,omitempty"`
	Rate      int64      `json:"transfer_bytes_second,omitempty"`
	// the step this line changed, as the gateway's fold of the stream
	// made it (gateway/progress); only on a stream asked with ?rows=steps
	Steps []MigrationStep `json:"steps,omitempty"`
}

// MigrationStep is one phase of a migration as its watch stream folds it:
// what `drove migrate --watch` and the console draw as one row.
type MigrationStep struct {
	Index int    `json:"index"`
	Phase string `json:"phase"`
	// the phase as a person reads it, e.g. synchronizing filesystems
	Label string `json:"label"`
	// running, or the phase's end state: successful, failed, paused, ...
	State string `json:"state"`
	// bytes (or, for a phase that sends none, steps) done so far
	Current int64 `json:"current_progress"`
	// bytes (or steps) in all; 0 before the phase reported a total
	Total int64 `json:"total_progress"`
	// how far the step is, from bytes; 100 only when it succeeded
	Percent float64 `json:"percent"`
	// the executor's rate and estimate of the time left; 0 once ended
	Rate int64 `json:"transfer_bytes_second"`
	ETA  int64 `json:"eta_ms"`
	// when the phase started, and ended (absent while it runs)
	Started time.Time  `json:"started_timestamp"`
	Ended   *time.Time `json:"ended_timestamp,omitempty"`
	// the last report, or why the phase failed
	Message string `json:"message"`
}
