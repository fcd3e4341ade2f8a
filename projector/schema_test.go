package projector_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	. "github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/testenv"
)

// oldViews are, in short, the views older builds left beside their
// numbered files, before schema/views.sql: at version 3 the moves table
// was still migrations and move_state was migration_state; at 24 every
// view had fewer columns than today. A row of version 3 shows that data
// outlives the views.
var oldViews = map[int]string{
	3: `CREATE VIEW request_status AS SELECT r.*, '' AS status FROM requests r;
		CREATE VIEW migration_state AS SELECT m.*, '' AS state FROM migrations m;
		CREATE VIEW instance_migrations AS SELECT m.id, m.instance FROM migrations m WHERE m.kind = 'instance';
		INSERT INTO migrations (id, request, job, idx, created_at, started_at) VALUES ('r/0/0', 'r', 0, 0, now(), now());`,
	24: `CREATE VIEW request_status AS SELECT r.*, '' AS status FROM requests r;
		CREATE VIEW move_state AS SELECT m.id, '' AS state FROM moves m;
		CREATE VIEW instance_migrations AS SELECT m.id, m.phase_running FROM moves m WHERE m.kind = 'instance';`,
}

// TestApplySchemaUpgradesEveryVersion leaves a schema as each older build
// left it and applies this build's schema to it: every one ends with the
// views a fresh schema has, and with every version recorded. (Built here
// from this build's numbered files, which no longer make views: the
// stand-ins above are what older builds' files made.)
func TestApplySchemaUpgradesEveryVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*testTimeout)
	defer cancel()
	pool := testenv.Postgres(t).Pool(ctx)
	if err := ApplySchema(ctx, pool, "fresh"); err != nil {
		t.Fatal(err)
	}
	want := viewColumns(t, ctx, pool, "fresh")
	for _, view := range []string{"request_status", "move_state", "instance_migrations"} {
		if len(want[view]) == 0 {
			t.Fatalf("fresh schema has no view %s: %v", view, want)
		}
	}
	versions, err := SchemaVersions()
	if err != nil {
		t.Fatal(err)
	}
	// Every older version: a schema at the latest one is what ApplySchema
	// itself leaves, and is left alone by the next (no view made again).
	for _, v := range versions[:len(versions)-1] {
		schema := fmt.Sprintf("at_%d", v)
		if err := ApplySchemaUpTo(ctx, pool, schema, v, oldViews[v]); err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if err := ApplySchema(ctx, pool, schema); err != nil {
			t.Fatalf("upgrade from version %d: %v", v, err)
		}
		got := viewColumns(t, ctx, pool, schema)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("views upgraded from version %d:\n%v\nwant (fresh):\n%v", v, got, want)
		}
		var recorded []int
		rows, err := pool.Query(ctx, `SELECT version FROM `+schema+`.schema_versions ORDER BY version`)
		if err == nil {
			recorded, err = pgx.CollectRows(rows, pgx.RowTo[int])
		}
		if err != nil || !slices.Equal(recorded, versions) {
			t.Errorf("versions recorded after upgrading from %d = %v, %v; want %v", v, recorded, err, versions)
		}
	}
	var state string
	if err := pool.QueryRow(ctx, `SELECT state FROM at_3.move_state WHERE id = 'r/0/0'`).Scan(&state); err != nil || state != "running" {
		t.Errorf("version 3's move in move_state: state %q, %v; want running", state, err)
	}
}

// TestApplySchemaLeavesANewerSchemaAlone: an older build starting beside a
// newer one must not make its own views again over the newer tables.
func TestApplySchemaLeavesANewerSchemaAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*testTimeout)
	defer cancel()
	pool := testenv.Postgres(t).Pool(ctx)
	versions, err := SchemaVersions()
	if err != nil {
		t.Fatal(err)
	}
	next := versions[len(versions)-1] + 1
	newer := fmt.Sprintf(`CREATE VIEW a_newer_view AS SELECT 1 AS one;
		INSERT INTO schema_versions (version, name) VALUES (%d, 'from a newer build')`, next)
	if err := ApplySchemaUpTo(ctx, pool, "newer", next-1, newer); err != nil {
		t.Fatal(err)
	}
	if err := ApplySchema(ctx, pool, "newer"); err != nil {
		t.Fatal(err)
	}
	got := viewColumns(t, ctx, pool, "newer")
	if fmt.Sprint(got) != "map[a_newer_view:[one integer]]" {
		t.Errorf("views of a newer schema after ApplySchema = %v, want only its own", got)
	}
}

// viewColumns lists each view of schema with its columns and their types,
// in order.
func viewColumns(t *testing.T, ctx context.Context, pool *pgxpool.Pool, schema string) map[string][]string {
	t.Helper()
	rows, err := pool.Query(ctx, `
		SELECT c.table_name, c.column_name, c.data_type
		FROM information_schema.columns c
		JOIN information_schema.views v USING (table_schema, table_name)
		WHERE c.table_schema = $1
		ORDER BY c.table_name, c.ordinal_position`, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var view, column, typ string
		if err := rows.Scan(&view, &column, &typ); err != nil {
			t.Fatal(err)
		}
		out[view] = append(out[view], column+" "+typ)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
