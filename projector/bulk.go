package projector

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/events/kafka"
)

// A fold into a fresh schema (Replay, AsOf) writes the whole log before
// anyone reads the schema, so it maintains only the indexes the fold
// reads (primary keys) and builds the others once at the end: an index
// built from the loaded table costs one sort, where rows folded into an
// indexed table cost each index a B-tree descent and insertion per row.
// On the projector bench that was most of Postgres's time: COPY into a
// table of event_log's shape ran at about a quarter of the speed of a
// COPY into its bare columns (issue 32). The views, their checksums and
// the indexes they end with are the same either way.

// deferredIndex is an index dropped for a bulk fold and built after it.
type deferredIndex struct {
	table, name string
	constraint  string // the constraint it backs, if any
	conDef      string // the constraint's definition
	indexDef    string // CREATE INDEX ..., schema-qualified
}

// deferIndexes drops schema's indexes the fold does not need and returns
// them, for buildIndexes.
func deferIndexes(ctx context.Context, pool *pgxpool.Pool, schema string) ([]deferredIndex, error) {
	rows, err := pool.Query(ctx, q("bulk_deferred_indexes"), schema)
	if err != nil {
		return nil, fmt.Errorf("projector: deferred indexes of %s: %w", schema, err)
	}
	var out []deferredIndex
	var d deferredIndex
	_, err = pgx.ForEachRow(rows, []any{&d.table, &d.name, &d.constraint, &d.conDef, &d.indexDef}, func() error {
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projector: deferred indexes of %s: %w", schema, err)
	}
	b := &pgx.Batch{}
	for _, d := range out {
		if d.constraint != "" {
			b.Queue(`ALTER TABLE ` + quoteIdent(schema) + `.` + quoteIdent(d.table) +
				` DROP CONSTRAINT ` + quoteIdent(d.constraint))
		} else {
			b.Queue(`DROP INDEX ` + quoteIdent(schema) + `.` + quoteIdent(d.name))
		}
	}
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("projector: drop deferred indexes of %s: %w", schema, err)
	}
	return out, nil
}

// buildIndexes builds the indexes deferIndexes dropped, in one
// transaction: a schema whose build did not finish has none of them.
func buildIndexes(ctx context.Context, pool *pgxpool.Pool, schema string, idx []deferredIndex) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Room to sort a large log's keys in memory: this is a one-off
		// build, not the steady state.
		if _, err := tx.Exec(ctx, `SET LOCAL maintenance_work_mem = '256MB'`); err != nil {
			return err
		}
		for _, d := range idx {
			sql := d.indexDef
			if d.constraint != "" {
				sql = `ALTER TABLE ` + quoteIdent(schema) + `.` + quoteIdent(d.table) +
					` ADD CONSTRAINT ` + quoteIdent(d.constraint) + ` ` + d.conDef
			}
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("projector: build the indexes of %s: %w", schema, err)
	}
	return nil
}

// foldBulk is foldRange into a fresh schema: its deferrable indexes are
// dropped before the fold and built after it.
func foldBulk(ctx context.Context, cfg Config, pool *pgxpool.Pool, f *folder, starts, targets map[tp]int64, stop func(kafka.Raw) bool) (int, error) {
	idx, err := deferIndexes(ctx, pool, f.schema)
	if err != nil {
		return 0, err
	}
	n, err := foldRange(ctx, cfg, pool, f, starts, targets, stop)
	if err != nil {
		return n, err
	}
	return n, buildIndexes(ctx, pool, f.schema, idx)
}
