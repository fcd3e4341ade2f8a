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

//go:embed schema/*.sql
var schemaFS embed.FS

// viewsFile holds every view of a schema (schema/views.sql); it is not a
// numbered step but is run again after them on every ApplySchema.
const viewsFile = "views.sql"

// schemaFile is one numbered file of schema/: one step of the views'
// schema, applied once per Postgres schema.
type schemaFile struct {
	version int
	name    string
	sql     string
}

// schemaFiles lists the embedded schema files in version order. The files are
// part of the binary, so a bad name is a build mistake: it panics in tests.
func schemaFiles() ([]schemaFile, error) {
	entries, err := fs.ReadDir(schemaFS, "schema")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	var out []schemaFile
	for _, e := range entries {
		name := e.Name()
		if name == viewsFile {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("%w: %s: want NNN_name.sql", ErrSchema, name)
		}
		b, err := schemaFS.ReadFile(path.Join("schema", name))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrSchema, name, err)
		}
		out = append(out, schemaFile{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b schemaFile) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("%w: %s and %s share version %d", ErrSchema, out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// latestVersion is the version a schema must be at for this build to fold
// into it.
func latestVersion() (int, error) {
	ms, err := schemaFiles()
	if err != nil || len(ms) == 0 {
		return 0, err
	}
	return ms[len(ms)-1].version, nil
}

// ApplySchema brings schema up to this build's schema files: it creates
// the schema if missing, then, in one transaction, applies each numbered
// file not yet recorded in the schema's schema_versions table, in version
// order, records it, and, when any was, makes every view again from
// views.sql (dropping the old ones first: views hold no data, and an
// upgraded schema then has the same views as a fresh one). A schema newer than this build is left
// as it is, views included, so an older build starting beside a newer one
// does not take its views back. It is idempotent, and safe to run from
// several processes at once: an advisory lock per schema serialises them.
func ApplySchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if !identifier.MatchString(schema) {
		return fmt.Errorf("%w: schema %q is not a lower-case identifier", ErrInvalidConfig, schema)
	}
	ms, err := schemaFiles()
	if err != nil {
		return err
	}
	views, err := schemaFS.ReadFile(path.Join("schema", viewsFile))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSchema, err)
	}
	if err := createSchema(ctx, pool, schema); err != nil {
		return err
	}
	err = inTx(ctx, pool, schema, func(tx pgx.Tx) error {
		if err := lockSchema(ctx, tx, schema); err != nil {
			return fmt.Errorf("lock schema %s: %w", schema, err)
		}
		var done []int
		rows, err := tx.Query(ctx, `SELECT version FROM schema_versions`)
		if err == nil {
			done, err = pgx.CollectRows(rows, pgx.RowTo[int])
		}
		if err != nil {
			return fmt.Errorf("read versions of %s: %w", schema, err)
		}
		if len(ms) > 0 && slices.Max(append(done, 0)) > ms[len(ms)-1].version {
			return nil // a newer build's schema: its views are its own
		}
		if !slices.ContainsFunc(ms, func(m schemaFile) bool { return !slices.Contains(done, m.version) }) {
			// Up to date: its views are this build's (views.sql changes
			// with a numbered file), and a restart takes no lock that
			// would stall the readers of the views.
			return nil
		}
		if err := dropViews(ctx, tx, schema); err != nil {
			return fmt.Errorf("drop the views of %s: %w", schema, err)
		}
		for _, m := range ms {
			if slices.Contains(done, m.version) {
				continue
			}
			if err := m.apply(ctx, tx); err != nil {
				return fmt.Errorf("%s in schema %s: %w", m.name, schema, err)
			}
		}
		if _, err := tx.Exec(ctx, string(views)); err != nil {
			return fmt.Errorf("%s in schema %s: %w", viewsFile, schema, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSchema, err)
	}
	return nil
}

// apply runs the file in tx, whose search_path is its schema, and records
// it in schema_versions.
func (m schemaFile) apply(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO schema_versions (version, name) VALUES ($1, $2)`, m.version, m.name)
	return err
}

// createSchema creates schema and its schema_versions table if missing.
func createSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	err := inTx(ctx, pool, "", func(tx pgx.Tx) error {
		if err := lockSchema(ctx, tx, schema); err != nil {
			return err
		}
		// schema_versions was called schema_migrations before "migration"
		// came to mean only RFD 34's; a schema made then keeps its record.
		_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE SCHEMA IF NOT EXISTS %[1]s;
			ALTER TABLE IF EXISTS %[1]s.schema_migrations RENAME TO schema_versions;
			CREATE TABLE IF NOT EXISTS %[1]s.schema_versions (
				version    int         PRIMARY KEY,
				name       text        NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`, quoteIdent(schema)))
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: create schema %s: %w", ErrSchema, schema, err)
	}
	return nil
}

// dropViews drops every view of schema, whatever its name: views.sql makes
// all of them, and a view an older schema file made under a name since
// changed (migration_state, now move_state) must go too.
func dropViews(ctx context.Context, tx pgx.Tx, schema string) error {
	var names []string
	rows, err := tx.Query(ctx, `SELECT quote_ident(viewname) FROM pg_views WHERE schemaname = $1 ORDER BY 1`, schema)
	if err == nil {
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(names) == 0 {
		return err
	}
	// One statement: views that read other views go with them.
	_, err = tx.Exec(ctx, `DROP VIEW `+strings.Join(names, ", "))
	return err
}

// appliedVersion returns the highest schema file applied to schema, 0 when
// the schema or its schema_versions table does not exist.
func appliedVersion(ctx context.Context, q querier, schema string) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`,
		quoteIdent(schema)+".schema_versions").Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := q.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(max(version), 0) FROM %s.schema_versions`,
		quoteIdent(schema))).Scan(&v)
	return v, err
}

// checkSchemaVersion returns ErrSchemaOutdated unless schema has every schema
// file of this build.
func checkSchemaVersion(ctx context.Context, q querier, schema string) error {
	want, err := latestVersion()
	if err != nil {
		return err
	}
	got, err := appliedVersion(ctx, q, schema)
	if err != nil {
		return fmt.Errorf("projector: read schema version of %s: %w", schema, err)
	}
	if got < want {
		return fmt.Errorf("%w: %s is at version %d, this build needs %d", ErrSchemaOutdated, schema, got, want)
	}
	return nil
}

// lockSchema takes the transaction-scoped advisory lock that serialises
// ApplySchema calls on schema.
func lockSchema(ctx context.Context, tx pgx.Tx, schema string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "drove.migrate."+schema)
	return err
}

// quoteIdent double-quotes a name already checked against identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
