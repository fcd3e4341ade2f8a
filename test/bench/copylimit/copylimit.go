// Package copylimit measures the physical limit the projector's fold is
// held against (issue 32): Postgres taking the fold's event_log rows
// without any logic. The live fold's rows are read back in binary and
// COPYed, in one statement, into an empty table of event_log's shape (a
// schema built by projector.ApplySchema: its columns, sequence, keys and
// indexes, which the fold must keep too): the figure the projector's
// rates are divided by, measured in the same run, because on a shared
// machine an absolute figure says as much about the neighbours as about
// the code. The same rows into a bare table (event_log's columns and
// nothing else: no index, no sequence, no constraint) are measured too,
// the stricter figure: what the heap alone takes.
package copylimit

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/bench/cpu"
)

// Result is what Measure found.
type Result struct {
	Rows int `json:"rows"`
	// BareRuns are the rows per second of each COPY into the bare table;
	// BareRowsPerSec is their median, BarePostgresCPUPer100k the
	// server's CPU per 100,000 rows in that run.
	BareRuns               []float64 `json:"runs_rows_per_second"`
	BareRowsPerSec         float64   `json:"rows_per_second"`
	BarePostgresCPUPer100k float64   `json:"postgres_cpu_seconds_per_100k"`
	// The same into event_log's whole shape: the median of as many runs.
	ShapeRuns               []float64 `json:"same_shape_runs_rows_per_second"`
	ShapeRowsPerSec         float64   `json:"same_shape_rows_per_second"`
	ShapePostgresCPUPer100k float64   `json:"same_shape_postgres_cpu_seconds_per_100k"`
}

// logColumns are event_log's columns but seq, which the table numbers
// itself as the projector's fold does.
const logColumns = `id, topic, partition, "offset", type, version, time, key, correlation_id,
	causation_id, producer, actor, why, request_id, instance, payload`

// Measure COPYs the event_log rows of the schema drove runs times into a
// fresh bare table and as many times into a fresh table of the same
// shape, alternating, so both see the same load. serverCPU reads the
// server's CPU seconds so far. It settles the database first, so the
// figures hold none of the phase before.
func Measure(ctx context.Context, pool *pgxpool.Pool, serverCPU func() float64, runs int) (*Result, error) {
	if err := Settle(ctx, pool); err != nil {
		return nil, err
	}
	data, rows, err := copyRows(ctx, pool)
	if err != nil {
		return nil, err
	}
	res := &Result{Rows: rows}
	var bare, shape []run
	for i := range runs {
		for _, whole := range []bool{false, true} {
			r, err := copyOnce(ctx, pool, serverCPU, fmt.Sprintf("copy_limit_%d", i), whole, data, rows)
			if err != nil {
				return nil, err
			}
			if whole {
				shape = append(shape, r)
				res.ShapeRuns = append(res.ShapeRuns, r.rps)
			} else {
				bare = append(bare, r)
				res.BareRuns = append(res.BareRuns, r.rps)
			}
		}
	}
	m := median(bare)
	res.BareRowsPerSec, res.BarePostgresCPUPer100k = m.rps, cpu.Per100k(m.cpu, rows)
	m = median(shape)
	res.ShapeRowsPerSec, res.ShapePostgresCPUPer100k = m.rps, cpu.Per100k(m.cpu, rows)
	return res, nil
}

// Settle vacuums and analyzes the database between measured phases,
// unmeasured: the server's CPU is read over all its processes, so
// autovacuum's work on what one phase wrote would otherwise land in the
// next one's figures.
func Settle(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `VACUUM ANALYZE`)
	return err
}

// copyRows reads the live schema's event_log rows, in the order they were
// folded, as COPY's binary data.
func copyRows(ctx context.Context, pool *pgxpool.Pool) ([]byte, int, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer conn.Release()
	var buf bytes.Buffer
	tag, err := conn.Conn().PgConn().CopyTo(ctx, &buf,
		`COPY (SELECT `+logColumns+` FROM drove.event_log ORDER BY seq) TO STDOUT (FORMAT binary)`)
	if err != nil {
		return nil, 0, fmt.Errorf("copy event_log out: %w", err)
	}
	return buf.Bytes(), int(tag.RowsAffected()), nil
}

type run struct{ rps, cpu float64 }

func median(rs []run) run {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b run) int { return cmp.Compare(a.rps, b.rps) })
	return rs[len(rs)/2]
}

// copyOnce builds schema (event_log's whole shape, or its columns alone),
// COPYs data into it and drops it.
func copyOnce(ctx context.Context, pool *pgxpool.Pool, serverCPU func() float64, schema string, whole bool, data []byte, rows int) (run, error) {
	var err error
	if whole {
		err = projector.ApplySchema(ctx, pool, schema)
	} else {
		cols := strings.ReplaceAll(logColumns, "\n\t", " ")
		_, err = pool.Exec(ctx, `CREATE SCHEMA `+schema+`;
			CREATE TABLE `+schema+`.event_log AS SELECT `+cols+` FROM drove.event_log WITH NO DATA`)
	}
	if err != nil {
		return run{}, err
	}
	d, secs, err := copyInto(ctx, pool, serverCPU, schema, data)
	_, derr := pool.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
	if err := errors.Join(err, derr); err != nil {
		return run{}, fmt.Errorf("copy limit: %w", err)
	}
	return run{rps: float64(rows) / d.Seconds(), cpu: secs}, nil
}

// copyInto COPYs data into schema's event_log in one transaction and
// returns the wall time and the server's CPU it took.
func copyInto(ctx context.Context, pool *pgxpool.Pool, serverCPU func() float64, schema string, data []byte) (time.Duration, float64, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	before := serverCPU()
	began := time.Now()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	sql := `COPY ` + schema + `.event_log (` + logColumns + `) FROM STDIN (FORMAT binary)`
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(data), sql); err != nil {
		return 0, 0, fmt.Errorf("copy into %s: %w", schema, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, err
	}
	return time.Since(began), serverCPU() - before, nil
}
