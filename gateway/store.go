package gateway

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// queries are the gateway's SQL, read from sql/*.sql with the schema
// spliced in where the files say {schema}: the pool is the caller's, so we
// cannot rely on its search_path.
type queries map[string]string

func loadQueries(quotedSchema string) (queries, error) {
	entries, err := sqlFiles.ReadDir("sql")
	if err != nil {
		return nil, err
	}
	q := queries{}
	for _, e := range entries {
		b, err := sqlFiles.ReadFile("sql/" + e.Name())
		if err != nil {
			return nil, err
		}
		q[strings.TrimSuffix(e.Name(), ".sql")] = strings.ReplaceAll(string(b), "{schema}", quotedSchema)
	}
	return q, nil
}

// get returns the query in sql/<name>.sql. A missing name is a bug in this
// package, caught by any test that takes the path.
func (q queries) get(name string) string {
	s, ok := q[name]
	if !ok {
		panic("gateway: no query sql/" + name + ".sql")
	}
	return s
}

// store reads the projector's views.
type store struct {
	pool *pgxpool.Pool
	q    queries
}

// request is a row of request_status, as the API shows it.
type request struct {
	ID               string          `db:"id" json:"id"`
	Kind             string          `db:"kind" json:"kind"`
	Status           string          `db:"status" json:"status"`
	Nodes            []string        `db:"nodes" json:"nodes"`
	Mode             string          `db:"mode" json:"mode,omitempty"`
	Instances        []string        `db:"instances" json:"instances"`
	TargetGroups     []string        `db:"target_groups" json:"target_groups"`
	DryRun           bool            `db:"dry_run" json:"dry_run"`
	IgnoreSoftErrors bool            `db:"ignore_soft_errors" json:"ignore_soft_errors"`
	MaxMovesPerNode  int             `db:"max_moves_per_node" json:"max_moves_per_node"`
	Actor            string          `db:"actor" json:"actor"`
	Why              string          `db:"why" json:"reason"`
	RequestedAt      *time.Time      `db:"requested_at" json:"requested_at"`
	ApprovedAt       *time.Time      `db:"approved_at" json:"approved_at,omitempty"`
	CancelledAt      *time.Time      `db:"cancelled_at" json:"cancelled_at,omitempty"`
	RejectedAt       *time.Time      `db:"rejected_at" json:"rejected_at,omitempty"`
	RejectedReason   string          `db:"rejected_reason" json:"rejected_reason,omitempty"`
	PlannedAt        *time.Time      `db:"planned_at" json:"planned_at,omitempty"`
	Plans            int             `db:"plans" json:"plans"`
	FinishedAt       *time.Time      `db:"finished_at" json:"finished_at,omitempty"`
	Moved            json.RawMessage `db:"moved" json:"-"`
	Failed           json.RawMessage `db:"failed" json:"-"`
}

// plan is the latest plan of a request.
type plan struct {
	Request     string          `db:"request" json:"request"`
	Moved       json.RawMessage `db:"moved" json:"moved"`
	Failed      json.RawMessage `db:"failed" json:"failed"`
	Jobs        json.RawMessage `db:"jobs" json:"jobs"`
	ScoreBefore float64         `db:"score_before" json:"score_before"`
	ScoreAfter  float64         `db:"score_after" json:"score_after"`
	ComputedAt  time.Time       `db:"computed_at" json:"computed_at"`
}

// job is one job of a plan with its lifecycle.
type job struct {
	Request      string          `db:"request" json:"request"`
	Index        int             `db:"idx" json:"index"`
	Instance     string          `db:"instance" json:"instance"`
	State        string          `db:"state" json:"state"`
	Opcodes      json.RawMessage `db:"opcodes" json:"opcodes"`
	Depends      json.RawMessage `db:"depends" json:"depends"`
	ReleasedAt   *time.Time      `db:"released_at" json:"released_at,omitempty"`
	CancelledAt  *time.Time      `db:"cancelled_at" json:"cancelled_at,omitempty"`
	CancelReason string          `db:"cancel_reason" json:"cancel_reason,omitempty"`
	EndedAt      *time.Time      `db:"ended_at" json:"ended_at,omitempty"`
	Error        string          `db:"error" json:"error,omitempty"`
}

// moveRecord is the RFD 34 record of a move of a bulk request, as the API
// shows it among /v1/migrations (kind opcode).
type moveRecord struct {
	ID               string           `db:"id" json:"id"`
	Kind             string           `db:"-" json:"kind"` // opcode: a move of a bulk request
	Request          string           `db:"request" json:"request"`
	Job              int              `db:"job" json:"job"`
	Index            int              `db:"idx" json:"index"`
	Instance         string           `db:"instance" json:"instance"`
	Account          string           `db:"account" json:"account"`
	Source           string           `db:"source_node" json:"source_server"`
	Target           string           `db:"target_node" json:"target_server"`
	OpID             string           `db:"op_id" json:"op_id"`
	Automatic        bool             `db:"automatic" json:"automatic"`
	State            string           `db:"state" json:"state"`
	Phase            string           `db:"phase" json:"phase"`
	CreatedAt        *time.Time       `db:"created_at" json:"created_timestamp"`
	StartedAt        *time.Time       `db:"started_at" json:"started_timestamp,omitempty"`
	FinishedAt       *time.Time       `db:"finished_at" json:"finished_timestamp,omitempty"`
	EndState         string           `db:"end_state" json:"end_state,omitempty"`
	ProgressState    string           `db:"progress_state" json:"progress_state,omitempty"`
	ProgressTime     *time.Time       `db:"progress_time" json:"progress_time,omitempty"`
	CurrentBytes     int64            `db:"current_bytes" json:"current_progress"`
	TotalBytes       int64            `db:"total_bytes" json:"total_progress"`
	ETASeconds       float64          `db:"eta_seconds" json:"eta_seconds"`
	BytesPerSecond   int64            `db:"bytes_per_second" json:"bytes_per_second"`
	Syncs            int              `db:"syncs" json:"num_sync_phases"`
	LastSyncBytes    int64            `db:"last_sync_bytes" json:"last_sync_bytes"`
	ProgressEndState string           `db:"progress_end_state" json:"progress_end_state,omitempty"`
	Message          string           `db:"message" json:"message,omitempty"`
	Error            string           `db:"error" json:"error,omitempty"`
	ErrorDetail      string           `db:"error_detail" json:"error_detail,omitempty"`
	History          []progressRecord `db:"-" json:"progress_history,omitempty"`
}

// progressRecord is one progress or end event of a migration.
type progressRecord struct {
	Seq     int64           `db:"seq" json:"seq"`
	Time    time.Time       `db:"time" json:"time"`
	Type    string          `db:"type" json:"type"`
	Payload json.RawMessage `db:"payload" json:"payload"`
}

// node is a node with the number of instances it holds in each role.
type node struct {
	Name               string    `db:"name" json:"name"`
	Group              string    `db:"group_name" json:"group"`
	TotalMemoryMiB     int64     `db:"total_memory_mib" json:"total_memory_mib"`
	TotalDiskMiB       int64     `db:"total_disk_mib" json:"total_disk_mib"`
	TotalCPUs          int       `db:"total_cpus" json:"total_cpus"`
	TotalSpindles      int       `db:"total_spindles" json:"total_spindles"`
	FreeMemoryMiB      int64     `db:"free_memory_mib" json:"free_memory_mib"`
	FreeDiskMiB        int64     `db:"free_disk_mib" json:"free_disk_mib"`
	Offline            bool      `db:"offline" json:"offline"`
	Drained            bool      `db:"drained" json:"drained"`
	VMCapable          bool      `db:"vm_capable" json:"vm_capable"`
	Tags               []string  `db:"tags" json:"tags"`
	UpdatedAt          time.Time `db:"updated_at" json:"updated_at"`
	PrimaryInstances   int64     `db:"primary_instances" json:"primary_instances"`
	SecondaryInstances int64     `db:"secondary_instances" json:"secondary_instances"`

	// HeartbeatAt is when the node's executor last renewed its lease.
	HeartbeatAt *time.Time `db:"heartbeat_at" json:"heartbeat_at,omitempty"`
}

// instance is an instance with where it runs now.
type instance struct {
	Name          string    `db:"name" json:"name"`
	Owner         string    `db:"owner" json:"owner"`
	MemoryMiB     int64     `db:"memory_mib" json:"memory_mib"`
	VCPUs         int       `db:"vcpus" json:"vcpus"`
	DiskMiB       int64     `db:"disk_mib" json:"disk_mib"`
	Storage       string    `db:"storage" json:"storage"`
	RunState      string    `db:"run_state" json:"run_state"`
	Group         string    `db:"group_name" json:"group"`
	Primary       string    `db:"primary_node" json:"primary"`
	Secondary     string    `db:"secondary_node" json:"secondary"`
	Tags          []string  `db:"tags" json:"tags"`
	UserMigration *bool     `db:"user_migration" json:"user_migration"`
	LastRequest   string    `db:"last_request" json:"last_request,omitempty"`
	UpdatedAt     time.Time `db:"updated_at" json:"updated_at"`
}

// group is a node group with its node count.
type group struct {
	Name        string    `db:"name" json:"name"`
	AllocPolicy string    `db:"alloc_policy" json:"alloc_policy"`
	Tags        []string  `db:"tags" json:"tags"`
	UpdatedAt   time.Time `db:"updated_at" json:"updated_at"`
	Nodes       int64     `db:"nodes" json:"nodes"`
}

// logRow is a row of event_log as watchers see it.
type logRow struct {
	Seq           int64           `db:"seq"`
	Time          time.Time       `db:"time"`
	Type          string          `db:"type"`
	RequestID     string          `db:"request_id"`
	CorrelationID string          `db:"correlation_id"`
	Instance      string          `db:"instance"`
	Payload       json.RawMessage `db:"payload"`
}

// request is the request the row belongs to: the reason trail's, else the
// correlation.
func (r logRow) request() string {
	if r.RequestID != "" {
		return r.RequestID
	}
	return r.CorrelationID
}

// claim is an instance held by an active request.
type claim struct {
	Instance string `db:"instance"`
	Request  string `db:"request"`
}

// named is an (instance, group) pair.
type named struct {
	Name  string `db:"name"`
	Group string `db:"group_name"`
}

// many runs query name and collects its rows into Ts by column name.
func many[T any](ctx context.Context, s *store, name string, args ...any) ([]T, error) {
	rows, err := s.pool.Query(ctx, s.q.get(name), args...)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", name, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", name, err)
	}
	return out, nil
}

// one runs query name and returns its only row, or ErrNotFound.
func one[T any](ctx context.Context, s *store, name string, args ...any) (T, error) {
	rows, err := s.pool.Query(ctx, s.q.get(name), args...)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("gateway: %s: %w", name, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	if errors.Is(err, pgx.ErrNoRows) {
		return v, ErrNotFound
	}
	if err != nil {
		return v, fmt.Errorf("gateway: %s: %w", name, err)
	}
	return v, nil
}

// column runs query name and returns its single text column.
func (s *store) column(ctx context.Context, name string, args ...any) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.q.get(name), args...)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", name, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", name, err)
	}
	return out, nil
}

func (s *store) request(ctx context.Context, id string) (request, error) {
	return one[request](ctx, s, "request_get", id)
}

func (s *store) plan(ctx context.Context, id string) (plan, error) {
	return one[plan](ctx, s, "plan_get", id)
}

func (s *store) move(ctx context.Context, id string) (moveRecord, error) {
	m, err := one[moveRecord](ctx, s, "move_get", id)
	if err != nil {
		return m, err
	}
	m.History, err = many[progressRecord](ctx, s, "move_history", m.Instance, m.Request, m.Job, m.Index)
	return m, err
}

func (s *store) instanceExists(ctx context.Context, name string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, s.q.get("instance_exists"), name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("gateway: instance_exists: %w", err)
	}
	return ok, nil
}
