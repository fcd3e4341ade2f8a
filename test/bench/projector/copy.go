package main

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
)

// The physical limit (issue 32): Postgres taking the same rows without
// any logic. The live fold's event_log rows are read back in binary and
// COPYed, in one statement, into an empty table with event_log's columns
// and nothing else (no index, no sequence, no constraint): that is the
// figure the projector's are divided by (copy_rows_per_s), measured in the
// same run, because on a shared machine an absolute figure says as much
// about the neighbours as about the code. The same rows into a table of
// event_log's whole shape (a schema built by projector.ApplySchema: its
// sequence, constraint and indexes, which the projector must maintain)
// are measured too: that is what the log alone costs the fold.

type copyResult struct {
	Rows int `json:"rows"`
	// Runs are the rows per second of each COPY into the bare table;
	// RowsPerSec is their median, PostgresCPUPer100k the server's CPU per
	// 100,000 rows in that run.
	Runs               []float64 `json:"runs_rows_per_second"`
	RowsPerSec         float64   `json:"rows_per_second"`
	PostgresCPUPer100k float64   `json:"postgres_cpu_seconds_per_100k"`
	// The same into event_log's whole shape: the median of as many runs.
	ShapeRuns               []float64 `json:"same_shape_runs_rows_per_second"`
	ShapeRowsPerSec         float64   `json:"same_shape_rows_per_second"`
	ShapePostgresCPUPer100k float64   `json:"same_shape_postgres_cpu_seconds_per_100k"`
}

// logColumns are event_log's columns but seq, which the table numbers
// itself as the projector's fold does.
const logColumns = `id, topic, partition, "offset", type, version, time, key, correlation_id,
	causation_id, producer, actor, why, request_id, instance, payload`

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

// copyInto COPYs data into schema's event_log in one transaction and
// returns the wall time and the server's CPU it took.
func copyInto(ctx context.Context, pool *pgxpool.Pool, pgCPU func() float64, schema string, data []byte) (time.Duration, float64, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	pgBefore := pgCPU()
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
	return time.Since(began), pgCPU() - pgBefore, nil
}

// copyLimit measures COPY of the live event_log's rows runs times into a
// fresh bare table and as many times into a fresh table of the same
// shape, alternating, so both see the same load.
func copyLimit(ctx context.Context, pool *pgxpool.Pool, pgCPU func() float64, runs int) (*copyResult, error) {
	data, rows, err := copyRows(ctx, pool)
	if err != nil {
		return nil, err
	}
	res := &copyResult{Rows: rows}
	var bare, shape []copyRun
	for i := range runs {
		for _, whole := range []bool{false, true} {
			r, err := copyOnce(ctx, pool, pgCPU, fmt.Sprintf("copy_limit_%d", i), whole, data, rows)
			if err != nil {
				return nil, err
			}
			if whole {
				shape = append(shape, r)
				res.ShapeRuns = append(res.ShapeRuns, r.rps)
			} else {
				bare = append(bare, r)
				res.Runs = append(res.Runs, r.rps)
			}
		}
	}
	m := median(bare)
	res.RowsPerSec, res.PostgresCPUPer100k = m.rps, per100k(m.cpu, rows)
	m = median(shape)
	res.ShapeRowsPerSec, res.ShapePostgresCPUPer100k = m.rps, per100k(m.cpu, rows)
	return res, nil
}

type copyRun struct{ rps, cpu float64 }

func median(rs []copyRun) copyRun {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b copyRun) int { return cmp.Compare(a.rps, b.rps) })
	return rs[len(rs)/2]
}

// copyOnce builds schema (event_log's whole shape, or its columns alone),
// COPYs data into it and drops it.
func copyOnce(ctx context.Context, pool *pgxpool.Pool, pgCPU func() float64, schema string, whole bool, data []byte, rows int) (copyRun, error) {
	var err error
	if whole {
		err = projector.ApplySchema(ctx, pool, schema)
	} else {
		cols := strings.ReplaceAll(logColumns, "\n\t", " ")
		_, err = pool.Exec(ctx, `CREATE SCHEMA `+schema+`;
			CREATE TABLE `+schema+`.event_log AS SELECT `+cols+` FROM drove.event_log WITH NO DATA`)
	}
	if err != nil {
		return copyRun{}, err
	}
	d, cpu, err := copyInto(ctx, pool, pgCPU, schema, data)
	_, derr := pool.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
	if err := errors.Join(err, derr); err != nil {
		return copyRun{}, fmt.Errorf("copy limit: %w", err)
	}
	return copyRun{rps: float64(rows) / d.Seconds(), cpu: cpu}, nil
}

// foldResult is a fold of the whole log into a fresh schema without
// Replay's checksums: projector.AsOf bounded by the log's end offsets,
// which is Replay's fold (the same foldRange, into a fresh schema, its
// indexes built after the load), so its CPU is the fold's alone.
type foldResult struct {
	Events       int64   `json:"events"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_second"`
	cpuFigures
}

func foldToEnd(ctx context.Context, pcfg projector.Config, pool *pgxpool.Pool, pgCPU func() float64) (*foldResult, error) {
	ends, err := logEnds(ctx, pcfg.Kafka.Brokers)
	if err != nil {
		return nil, err
	}
	b := projector.Bound{Offsets: map[string]map[int32]int64{}}
	for k, end := range ends {
		if b.Offsets[k.Topic] == nil {
			b.Offsets[k.Topic] = map[int32]int64{}
		}
		b.Offsets[k.Topic][k.Partition] = end
	}
	rss := sampleRSS() // first: its collection is not the phase's CPU
	selfBefore, pgBefore := selfCPU(), pgCPU()
	v, err := projector.AsOf(ctx, pcfg, pool, b)
	r := &foldResult{}
	r.RSSBeforeMiB, r.RSSPeakMiB = rss.done()
	r.HeapLiveGrowthMiB = rss.liveGrowthMiB()
	if err != nil {
		return nil, err
	}
	bench, pg := selfCPU()-selfBefore, pgCPU()-pgBefore
	if err := projector.DropAsOf(ctx, pcfg, pool, v.Name); err != nil {
		return nil, err
	}
	r.Events, r.Seconds = v.Events, v.Took.Seconds()
	r.EventsPerSec = float64(v.Events) / r.Seconds
	r.BenchCPUPer100k, r.PostgresCPUPer100k = per100k(bench, int(v.Events)), per100k(pg, int(v.Events))
	return r, nil
}
