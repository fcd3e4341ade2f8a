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

	"github.com/drovehq/drove/gateway/wire"
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

// query runs query name planned with its arguments: the gateway's
// queries filter by a column only when its argument is not empty, in SQL
// a plan cached for any arguments cannot simplify. Such a generic plan
// estimated one row for every filter and listed 50 migrations of 27,000
// in a second, by nested loops over all of them; planned with the
// arguments (the unnamed statement, its description cached), the same
// page took under 1 ms, plus 1-3 ms to plan.
func (s *store) query(ctx context.Context, name string, args ...any) (pgx.Rows, error) {
	return s.pool.Query(ctx, s.q.get(name), append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

// many runs query name and collects its rows into Ts by column name.
func many[T any](ctx context.Context, s *store, name string, args ...any) ([]T, error) {
	rows, err := s.query(ctx, name, args...)
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
	rows, err := s.query(ctx, name, args...)
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
	rows, err := s.query(ctx, name, args...)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", name, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", name, err)
	}
	return out, nil
}

func (s *store) request(ctx context.Context, id string) (wire.Request, error) {
	return one[wire.Request](ctx, s, "request_get", id)
}

func (s *store) plan(ctx context.Context, id string) (wire.PlanRow, error) {
	return one[wire.PlanRow](ctx, s, "plan_get", id)
}

func (s *store) move(ctx context.Context, id string) (wire.Move, error) {
	m, err := one[wire.Move](ctx, s, "move_get", id)
	if err != nil {
		return m, err
	}
	m.History, err = many[wire.ProgressRecord](ctx, s, "move_history", m.Instance, m.Request, m.Job, m.Index)
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
