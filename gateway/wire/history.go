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
}
