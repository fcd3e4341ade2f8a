package projector

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// queries holds the named statements of sql/*.sql. A file is a sequence of
// statements, each headed by a "-- name: <name>" line.
var queries = loadQueries()

func loadQueries() map[string]string {
	out := map[string]string{}
	entries, err := sqlFiles.ReadDir("sql")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := sqlFiles.ReadFile("sql/" + e.Name())
		if err != nil {
			panic(err)
		}
		var name string
		var body strings.Builder
		flush := func() {
			if name != "" {
				if _, dup := out[name]; dup {
					panic(fmt.Sprintf("projector: query %s defined twice", name))
				}
				out[name] = strings.TrimSpace(body.String())
			}
			body.Reset()
		}
		for line := range strings.Lines(string(b)) {
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
				flush()
				name = strings.TrimSpace(n)
				continue
			}
			if name != "" {
				body.WriteString(line)
			}
		}
		flush()
	}
	return out
}

// q returns the named query; a missing name is a programming error caught
// by every test.
func q(name string) string {
	s, ok := queries[name]
	if !ok {
		panic("projector: no query named " + name)
	}
	return s
}

// beginner is what both a pool and one acquired connection offer.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// querier is what reads need.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// inTx runs fn in a transaction whose search_path is schema (when not
// empty), and commits if fn returns nil. The search_path is set LOCAL, so a
// pooled connection goes back to the pool as it came: the live schema and
// a replay schema can share one pool.
func inTx(ctx context.Context, db beginner, schema string, fn func(pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if schema != "" {
		if err := setSearchPath(ctx, tx, schema); err != nil {
			return err
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func setSearchPath(ctx context.Context, tx pgx.Tx, schema string) error {
	_, err := tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, quoteIdent(schema))
	return err
}

// isDataError reports whether Postgres refused a value itself (SQLSTATE
// class 22: a NUL in a string, a number out of range; or a CHECK
// constraint, 23514, such as event_log's on a payload's NUL). Such a
// record can never be stored, so it is set aside instead of retried
// forever.
func isDataError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || pe.Code == "23514")
}
