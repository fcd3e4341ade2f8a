package projector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/events/kafka"
)

// A fold into a schema that holds nothing yet writes the whole log before
// the schema is of any use, so it maintains only the indexes the fold
// reads (primary keys) and builds the others once at the end: an index
// built from the loaded table costs one sort, where rows folded into an
// indexed table cost each index a B-tree descent and insertion per row.
// On the projector bench that was most of Postgres's time: COPY into a
// table of event_log's shape ran at about a quarter of the speed of a
// COPY into its bare columns (issue 32). Replay and AsOf fold so, and so
// does a live projector that starts on a schema that has folded nothing
// with at least Config.BulkCatchUp records to fold: it builds the indexes
// when it first catches up (readers meanwhile read views that are far
// behind anyway, without those indexes). The views, their checksums and
// the indexes they end with are the same either way. The dropped indexes
// are recorded in projector_deferred_indexes in the transaction that
// drops them, and each is deleted in the one that builds it, so a
// projector that stops half way builds the rest when it next catches up.

// deferredIndex is an index dropped for a bulk fold and built after it.
type deferredIndex struct {
	table, name string
	constraint  string // the constraint it backs, if any
	conDef      string // the constraint's definition
	indexDef    string // CREATE INDEX ..., schema-qualified
}

// deferIndexes drops schema's indexes the fold does not need, records
// them, and returns them, for buildIndexes.
func deferIndexes(ctx context.Context, db beginner, schema string) ([]deferredIndex, error) {
	var out []deferredIndex
	err := inTx(ctx, db, schema, func(tx pgx.Tx) error {
		var err error
		if out, err = readIndexes(ctx, tx, q("bulk_deferred_indexes"), schema); err != nil {
			return err
		}
		for _, d := range out {
			drop := `DROP INDEX ` + quoteIdent(schema) + `.` + quoteIdent(d.name)
			if d.constraint != "" {
				drop = `ALTER TABLE ` + quoteIdent(schema) + `.` + quoteIdent(d.table) +
					` DROP CONSTRAINT ` + quoteIdent(d.constraint)
			}
			if _, err := tx.Exec(ctx, drop); err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
			if _, err := tx.Exec(ctx, q("bulk_deferred_record"), d.name, d.table, d.constraint, d.conDef, d.indexDef); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projector: defer the indexes of %s: %w", schema, err)
	}
	return out, nil
}

// pendingIndexes reads the indexes a bulk fold of schema dropped and has
// not built yet.
func pendingIndexes(ctx context.Context, db beginner, schema string) ([]deferredIndex, error) {
	var out []deferredIndex
	err := inTx(ctx, db, schema, func(tx pgx.Tx) error {
		var err error
		out, err = readIndexes(ctx, tx, q("bulk_deferred_pending"))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("projector: deferred indexes of %s: %w", schema, err)
	}
	return out, nil
}

func readIndexes(ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]deferredIndex, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	var out []deferredIndex
	var d deferredIndex
	_, err = pgx.ForEachRow(rows, []any{&d.table, &d.name, &d.constraint, &d.conDef, &d.indexDef}, func() error {
		out = append(out, d)
		return nil
	})
	return out, err
}

// buildIndexes builds the indexes deferIndexes dropped, each in a
// transaction of its own that also clears its record, indexBuilders at a
// time: a build is one table scan and one sort on one backend, so two
// builds at once keep a second core busy (on the projector bench the
// builds were about a fifth of a fold's Postgres time, all on one core).
// Builds on one table may run at once (CREATE INDEX takes a share lock);
// a constraint's (ALTER TABLE, an exclusive lock) waits for them or they
// for it, never in a cycle, since each transaction locks one table. The
// constraints go first, so none waits behind a long build while its
// neighbours idle. A build that fails stays recorded, built at the next
// catch-up.
func buildIndexes(ctx context.Context, pool *pgxpool.Pool, schema string, idx []deferredIndex) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan deferredIndex, len(idx))
	for _, constraint := range []bool{true, false} {
		for _, d := range idx {
			if (d.constraint != "") == constraint {
				work <- d
			}
		}
	}
	close(work)
	errs := make([]error, indexBuilders)
	var wg sync.WaitGroup
	for i := range min(indexBuilders, len(idx)) {
		wg.Go(func() {
			for d := range work {
				if errs[i] = buildIndex(ctx, pool, schema, d); errs[i] != nil {
					cancel() // the other builder stops after its current index
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("projector: build the indexes of %s: %w", schema, err)
	}
	return nil
}

// indexBuilders is how many of a schema's deferred indexes are built at
// once.
const indexBuilders = 2

// buildIndex builds one deferred index and clears its record.
func buildIndex(ctx context.Context, pool *pgxpool.Pool, schema string, d deferredIndex) error {
	return inTx(ctx, pool, schema, func(tx pgx.Tx) error {
		// Room to sort a large log's keys in memory: this is a one-off
		// build, not the steady state.
		if _, err := tx.Exec(ctx, `SET LOCAL maintenance_work_mem = '256MB'`); err != nil {
			return err
		}
		sql := d.indexDef
		if d.constraint != "" {
			sql = `ALTER TABLE ` + quoteIdent(schema) + `.` + quoteIdent(d.table) +
				` ADD CONSTRAINT ` + quoteIdent(d.constraint) + ` ` + d.conDef
		}
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		_, err := tx.Exec(ctx, q("bulk_deferred_built"), d.name)
		return err
	})
}

// foldBulk is foldRange into a fresh schema: its deferrable indexes are
// dropped before the fold and, when build, built after it. A schema that
// only Replay's checksums read before it is dropped needs none of them:
// a checksum scans whole tables, and the builds were a sixth of a
// replay's fold on the projector bench. The primary keys stay, so the
// fold is the same either way; a row that a deferred unique key would
// refuse shows as a row the live table lacks.
func foldBulk(ctx context.Context, cfg Config, pool *pgxpool.Pool, f *folder, starts, targets map[tp]int64, stop func(kafka.Raw) bool, build bool) (int, error) {
	idx, err := deferIndexes(ctx, pool, f.schema)
	if err != nil {
		return 0, err
	}
	n, err := foldRange(ctx, cfg, pool, f, starts, targets, stop)
	if err != nil || !build {
		return n, err
	}
	return n, buildIndexes(ctx, pool, f.schema, idx)
}

// bulkCatchUp says which indexes a live Run folds without: those a Run
// before it deferred and did not build, or, on a schema that has folded
// nothing (no offsets stored) with at least BulkCatchUp records to fold
// (from r's positions to its ends), those it defers now. nil means none.
func (p *Projector) bulkCatchUp(ctx context.Context, conn *pgxpool.Conn, stored map[tp]int64, r *kafka.Reader) ([]deferredIndex, error) {
	idx, err := pendingIndexes(ctx, conn, p.cfg.Schema)
	if err != nil || len(idx) > 0 || len(stored) > 0 || p.cfg.BulkCatchUp < 0 {
		return idx, err
	}
	var backlog int64
	pos := r.Position()
	for k, end := range r.Ends() {
		backlog += max(end-pos[k], 0)
	}
	if backlog < int64(p.cfg.BulkCatchUp) {
		return nil, nil
	}
	p.log.Info("projector: an empty schema far behind the log: folding without its secondary indexes until caught up",
		"records", backlog)
	return deferIndexes(ctx, conn, p.cfg.Schema)
}
