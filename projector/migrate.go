package projector

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered file of migrations/.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded migrations in version order. The files are
// part of the binary, so a bad name is a build mistake: it panics in tests.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMigration, err)
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("%w: %s: want NNN_name.sql", ErrMigration, name)
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrMigration, name, err)
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("%w: %s and %s share version %d", ErrMigration, out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// latestVersion is the version a schema must be at for this build to fold
// into it.
func latestVersion() (int, error) {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0, err
	}
	return ms[len(ms)-1].version, nil
}

// Migrate brings schema up to this build's migrations: it creates the
// schema if missing, then applies each migration not yet recorded in the
// schema's schema_migrations table, in version order, each in its own
// transaction together with its record. It is idempotent, and safe to run
// from several processes at once: an advisory lock per schema serialises
// them.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if !identifier.MatchString(schema) {
		return fmt.Errorf("%w: schema %q is not a lower-case identifier", ErrInvalidConfig, schema)
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	err = inTx(ctx, pool, "", func(tx pgx.Tx) error {
		if err := lockSchema(ctx, tx, schema); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE SCHEMA IF NOT EXISTS %[1]s;
			CREATE TABLE IF NOT EXISTS %[1]s.schema_migrations (
				version    int         PRIMARY KEY,
				name       text        NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`, quoteIdent(schema)))
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: create schema %s: %w", ErrMigration, schema, err)
	}
	for _, m := range ms {
		err := inTx(ctx, pool, schema, func(tx pgx.Tx) error {
			if err := lockSchema(ctx, tx, schema); err != nil {
				return err
			}
			var done bool
			if err := tx.QueryRow(ctx,
				`SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.version).Scan(&done); err != nil {
				return err
			}
			if done {
				return nil
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("%w: %s in schema %s: %w", ErrMigration, m.name, schema, err)
		}
	}
	return nil
}

// migratedVersion returns the highest migration applied to schema, 0 when
// the schema or its schema_migrations table does not exist.
func migratedVersion(ctx context.Context, q querier, schema string) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`,
		quoteIdent(schema)+".schema_migrations").Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := q.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(max(version), 0) FROM %s.schema_migrations`,
		quoteIdent(schema))).Scan(&v)
	return v, err
}

// checkMigrated returns ErrNotMigrated unless schema has every migration of
// this build.
func checkMigrated(ctx context.Context, q querier, schema string) error {
	want, err := latestVersion()
	if err != nil {
		return err
	}
	got, err := migratedVersion(ctx, q, schema)
	if err != nil {
		return fmt.Errorf("projector: read schema version of %s: %w", schema, err)
	}
	if got < want {
		return fmt.Errorf("%w: %s is at version %d, this build needs %d", ErrNotMigrated, schema, got, want)
	}
	return nil
}

// lockSchema takes the transaction-scoped advisory lock that serialises
// migrations of schema.
func lockSchema(ctx context.Context, tx pgx.Tx, schema string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "drove.migrate."+schema)
	return err
}

// quoteIdent double-quotes a name already checked against identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
