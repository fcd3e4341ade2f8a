package wire

import (
	"encoding/json"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

// Evacuation is POST /v1/evacuations: empty nodes.
type Evacuation struct {
	Nodes            []string `json:"nodes"`
	Mode             string   `json:"mode" enum:"primary-only,secondary-only,all"`
	DryRun           bool     `json:"dry_run,omitempty"`
	IgnoreSoftErrors bool     `json:"ignore_soft_errors,omitempty"`
	// 0 means the service default
	MaxMovesPerNode int    `json:"max_moves_per_node,omitempty" minimum:"0" maximum:"2147483647"`
	Reason          string `json:"reason,omitempty"`
}

// GroupChange is POST /v1/group-changes: move instances to other groups.
type GroupChange struct {
	Instances []string `json:"instances"`
	// the groups the instances may go to; null or absent: any group but
	// their own
	TargetGroups []string `json:"target_groups,omitempty" nullable:"true"`
	DryRun       bool     `json:"dry_run,omitempty"`
	Reason       string   `json:"reason,omitempty"`
}

// Reason is the optional body of the commands that take nothing else:
// approve, cancel, the node commands, stop and start.
type Reason struct {
	Reason string `json:"reason,omitempty"`
}

// Links are related URLs: self, plan, jobs, watch, cancel, approve (dry
// runs), migrate.
type Links map[string]string

// Accepted is the answer to a command.
type Accepted struct {
	Request string `json:"request"`
	// accepted, awaiting-approval, rejected (dry runs), or '<verb> accepted'
	Status string `json:"status"`
	// a dry run's plan
	Plan    *PlanRow `json:"plan,omitempty"`
	Message string   `json:"message,omitempty"`
	Links   Links    `json:"links"`
}

// Request is a request (an evacuation or a group change) as the views
// show it.
type Request struct {
	ID               string     `db:"id" json:"id"`
	Kind             string     `db:"kind" json:"kind" enum:"evacuation,group-change"`
	Status           string     `db:"status" json:"status" enum:"accepted,planning,awaiting-approval,running,cancelling,finished,rejected"`
	Nodes            []string   `db:"nodes" json:"nodes"`
	Mode             string     `db:"mode" json:"mode,omitempty"`
	Instances        []string   `db:"instances" json:"instances"`
	TargetGroups     []string   `db:"target_groups" json:"target_groups"`
	DryRun           bool       `db:"dry_run" json:"dry_run"`
	IgnoreSoftErrors bool       `db:"ignore_soft_errors" json:"ignore_soft_errors"`
	MaxMovesPerNode  int        `db:"max_moves_per_node" json:"max_moves_per_node"`
	Actor            string     `db:"actor" json:"actor"`
	Why              string     `db:"why" json:"reason"`
	RequestedAt      *time.Time `db:"requested_at" json:"requested_at"`
	ApprovedAt       *time.Time `db:"approved_at" json:"approved_at,omitempty"`
	CancelledAt      *time.Time `db:"cancelled_at" json:"cancelled_at,omitempty"`
	RejectedAt       *time.Time `db:"rejected_at" json:"rejected_at,omitempty"`
	RejectedReason   string     `db:"rejected_reason" json:"rejected_reason,omitempty"`
	PlannedAt        *time.Time `db:"planned_at" json:"planned_at,omitempty"`
	Plans            int        `db:"plans" json:"plans"`
	FinishedAt       *time.Time `db:"finished_at" json:"finished_at,omitempty"`
	// The outcome as the views hold it; RequestDetail shows it.
	Moved  json.RawMessage `db:"moved" json:"-"`
	Failed json.RawMessage `db:"failed" json:"-"`
}

// RequestDetail is GET /v1/requests/{id}: the request, a summary of its
// latest plan, its jobs' states and, once finished, its outcome.
type RequestDetail struct {
	Request
	Plan    *PlanSummary `json:"plan,omitempty"`
	Jobs    []JobState   `json:"jobs"`
	Outcome *Outcome     `json:"outcome,omitempty"`
	// the makespan estimate of the jobs ahead
	Estimate *RequestEstimate `json:"estimate,omitempty"`
	Links    Links            `json:"links"`
	Message  string           `json:"message,omitempty"`
}

// PlanSummary counts a plan's parts.
type PlanSummary struct {
	Moved       int     `json:"moved"`
	Failed      int     `json:"failed"`
	Jobs        int     `json:"jobs"`
	ScoreBefore float64 `json:"score_before"`
	ScoreAfter  float64 `json:"score_after"`
	ComputedAt  string  `json:"computed_at"`
}

// JobState is one job of a request, in a line.
type JobState struct {
	Index    int    `json:"index"`
	Instance string `json:"instance"`
	State    string `json:"state"`
	Error    string `json:"error,omitempty"`
}

// Outcome is a finished request's: what moved, what did not and why.
type Outcome struct {
	Moved  json.RawMessage `json:"moved"`
	Failed json.RawMessage `json:"failed"`
}

// RequestEstimate is the makespan estimate of the request's jobs still
// ahead (for a dry run: if approved now); absent once none is ahead.
// The jobs are released as the planner service releases them
// (jobs.EstimatePlan), and the lower bound is one no schedule beats
// (planner.LowerBound).
type RequestEstimate struct {
	// expected time from now to the last job's end
	FinishSeconds float64 `json:"finish_seconds"`
	// now plus finish_seconds
	ExpectedFinishAt string `json:"expected_finish_at" format:"date-time"`
	// no schedule of the jobs ahead finishes sooner
	LowerBoundSeconds float64 `json:"lower_bound_seconds"`
	// the bound's terms; seconds is the largest
	LowerBound planner.Bound `json:"lower_bound"`
	// bytes still to send
	Bytes     int64 `json:"bytes"`
	JobsAhead int   `json:"jobs_ahead"`
	// where each input came from
	How string `json:"how"`
}

// PlanRow is a request's plan as the views hold it (GET
// /v1/requests/{id}/plan, and a dry run's Accepted.Plan): the
// PlanComputed event in force, its parts joined, and when it was
// computed. Plan is the same, decoded.
type PlanRow struct {
	Request string `db:"request" json:"request"`
	// instances placed: name, new primary and secondary, kind of move
	Moved json.RawMessage `db:"moved" json:"moved"`
	// instances not moved, each with its reasons
	Failed json.RawMessage `db:"failed" json:"failed"`
	// jobs: opcodes and the indexes of the jobs each depends on
	Jobs        json.RawMessage `db:"jobs" json:"jobs"`
	ScoreBefore float64         `db:"score_before" json:"score_before"`
	ScoreAfter  float64         `db:"score_after" json:"score_after"`
	ComputedAt  time.Time       `db:"computed_at" json:"computed_at"`
	// a dry run's moves, each with the downtime predicted for it; absent
	// for a request that is no dry run
	Moves []MoveDowntime `db:"-" json:"moves,omitempty"`
}

// Plan is a plan as Go callers read it: PlanRow with its parts decoded.
type Plan struct {
	events.PlanComputed
	ComputedAt time.Time      `json:"computed_at"`
	Moves      []MoveDowntime `json:"moves,omitempty"`
}

// MoveDowntime is one move of a dry run's plan (an opcode of a job) and
// the downtime predicted for it before it runs, by action=estimate's
// model (planner/downtime, from what earlier moves measured, else stated
// defaults), the move going off its planned source.
type MoveDowntime struct {
	Job int `json:"job"`
	// the opcode's place in its job
	Index    int    `json:"index"`
	Instance string `json:"instance"`
	OpID     string `json:"op_id"`
	From     string `json:"from"`
	To       string `json:"to"`
	// 0 for a move that does not stop its instance (replace-disks)
	PredictedDowntimeMS int64 `json:"predicted_downtime_ms"`
	// the prediction's parts, as an estimate's
	Downtime DowntimeParts `json:"downtime"`
	// how the figure was reached, in the estimate's words
	How string `json:"how"`
}

// Job is one job of a plan with its lifecycle.
type Job struct {
	Request      string          `db:"request" json:"request"`
	Index        int             `db:"idx" json:"index"`
	Instance     string          `db:"instance" json:"instance"`
	State        string          `db:"state" json:"state" enum:"waiting,running,success,error,canceled"`
	Opcodes      json.RawMessage `db:"opcodes" json:"opcodes"`
	Depends      json.RawMessage `db:"depends" json:"depends"`
	ReleasedAt   *time.Time      `db:"released_at" json:"released_at,omitempty"`
	CancelledAt  *time.Time      `db:"cancelled_at" json:"cancelled_at,omitempty"`
	CancelReason string          `db:"cancel_reason" json:"cancel_reason,omitempty"`
	EndedAt      *time.Time      `db:"ended_at" json:"ended_at,omitempty"`
	Error        string          `db:"error" json:"error,omitempty"`
}
