package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/bench/copylimit"
	"github.com/drovehq/drove/test/bench/cpu"
)

// projector folds the whole log (every service stopped, so it no longer
// grows) into fresh views, live, then replays it and compares.
func (w *world) projector(ctx context.Context, r *result) error {
	pg, err := embedded.StartPostgres(ctx, embedded.Postgres{Dir: filepath.Join(w.tmp, "pg")})
	if err != nil {
		return err
	}
	defer func() { _ = pg.Stop() }()
	if err := pg.EnsureDatabase(ctx, "drove"); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, pg.URL("drove"))
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := projector.ApplySchema(ctx, pool, "drove"); err != nil {
		return err
	}
	brokers, what, stopBroker, err := w.foldBrokers(ctx)
	if err != nil {
		return err
	}
	defer stopBroker()
	r.note(w.out, "projector_live_eps", "folded from %s", what)
	pcfg := projector.Config{Kafka: kafka.Config{Brokers: brokers, FetchMaxWait: 100 * time.Millisecond, Logger: w.quiet},
		LagInterval: time.Second, ReplayWait: time.Minute, Logger: w.quiet}
	p, err := projector.New(pcfg, pool)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- p.Run(rctx) }()
	folded, last, err := w.waitFolded(ctx, brokers, pool, done)
	cancel()
	if rerr := <-done; err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("live projector: %w", err)
	}
	live := float64(folded) / last.Sub(began).Seconds()
	r.ProjectorLiveEPS = f64(live)
	fmt.Fprintf(w.out, "projector folded %d events from zero in %.1fs: %.0f events/s\n", folded, last.Sub(began).Seconds(), live)
	lim := w.copyLimit(ctx, pool, pg.DataDir, r)

	// The replay runs on connections of its own, as `drove replay` does
	// (test/bench/projector's replayOwnPool says why).
	rpool, err := pgxpool.New(ctx, pg.URL("drove"))
	if err != nil {
		return err
	}
	defer rpool.Close()
	rep, err := projector.Replay(ctx, pcfg, rpool)
	if err != nil {
		r.note(w.out, "projector_replay_eps", "%v", err)
		return nil
	}
	r.ProjectorReplayEPS = f64(float64(rep.Events) / rep.FoldDuration.Seconds())
	if lim != nil {
		r.ProjectorReplayRatioToCopy = f64(*r.ProjectorReplayEPS / lim.ShapeRowsPerSec)
		r.ProjectorReplayRatioToBareCopy = f64(*r.ProjectorReplayEPS / lim.BareRowsPerSec)
	}
	fmt.Fprintf(w.out, "projector replay: %d events in %.1fs: %.0f events/s, equal to live: %v\n",
		rep.Events, rep.FoldDuration.Seconds(), *r.ProjectorReplayEPS, rep.Equal)
	if !rep.Equal {
		r.note(w.out, "projector_replay_eps", "the replay's views DIFFER from the live ones")
	}
	return nil
}

// copyLimit measures issue 32's physical limit on this log, Postgres's
// COPY of the live fold's event_log rows (test/bench/copylimit), and the
// live fold's ratio to it; nil, with a note, if it cannot.
func (w *world) copyLimit(ctx context.Context, pool *pgxpool.Pool, pgData string, r *result) *copylimit.Result {
	lim, err := copylimit.Measure(ctx, pool, func() float64 { return cpu.Postgres(pgData) }, copyRuns)
	if err == nil {
		err = copylimit.Settle(ctx, pool) // the replay's figures hold none of the COPYs' cleanup
	}
	if err != nil {
		r.note(w.out, "copy_rows_per_s", "%v", err)
		return nil
	}
	r.CopyRowsPerS, r.BareCopyRowsPerS = f64(lim.ShapeRowsPerSec), f64(lim.BareRowsPerSec)
	r.ProjectorLiveRatioToCopy = f64(*r.ProjectorLiveEPS / lim.ShapeRowsPerSec)
	r.ProjectorLiveRatioToBareCopy = f64(*r.ProjectorLiveEPS / lim.BareRowsPerSec)
	fmt.Fprintf(w.out, "COPY of the %d event_log rows: %.0f rows/s into a bare table (runs %.0f), %.0f into event_log's shape (runs %.0f)\n",
		lim.Rows, lim.BareRowsPerSec, lim.BareRuns, lim.ShapeRowsPerSec, lim.ShapeRuns)
	return lim
}

// copyRuns is how many COPYs of each kind the limit's median is of.
const copyRuns = 3

// waitFolded polls the projector's offsets until every partition is
// folded up to the log's end and returns event_log's size with the time
// they last moved: the live projector's catch-up. A partition's last
// record may be a transaction's commit marker, which the projector need
// not pass: one short of the end counts when the offsets stood still for
// 3 s (a pause alone does not: a loaded machine stalls the fold).
func (w *world) waitFolded(ctx context.Context, brokers []string, pool *pgxpool.Pool, done <-chan error) (int64, time.Time, error) {
	ends, err := kafka.Ends(ctx, kafka.Config{Brokers: brokers}, events.Topics()...)
	if err != nil {
		return 0, time.Now(), err
	}
	var n int64
	last := time.Now()
	deadline := time.Now().Add(time.Hour)
	for time.Now().Before(deadline) {
		m, short, err := folded(ctx, pool, ends)
		if err != nil {
			return 0, last, err
		}
		if m != n {
			n, last = m, time.Now()
		}
		if short == 0 || (short < 0 && time.Since(last) > 3*time.Second) {
			var events int64
			err := pool.QueryRow(ctx, `SELECT count(*) FROM drove.event_log`).Scan(&events)
			return events, last, err
		}
		select {
		case err := <-done:
			return n, last, fmt.Errorf("stopped: %v", err)
		case <-ctx.Done():
			return n, last, ctx.Err()
		case <-time.After(100 * time.Millisecond): // polling a count under a deadline
		}
	}
	return n, last, errors.New("the live projector did not catch up within an hour")
}

// folded sums the projector's offsets and says how far they are from
// ends: 0 at every end, -1 when each partition is at most one short,
// else 1.
func folded(ctx context.Context, pool *pgxpool.Pool, ends kafka.Positions) (int64, int, error) {
	rows, err := pool.Query(ctx, `SELECT topic, partition, next_offset FROM drove.projector_offsets`)
	if err != nil {
		return 0, 1, err
	}
	at := kafka.Positions{}
	var sum int64
	for rows.Next() {
		var tp kafka.TopicPartition
		var next int64
		if err := rows.Scan(&tp.Topic, &tp.Partition, &next); err != nil {
			return 0, 1, err
		}
		at[tp], sum = next, sum+next
	}
	if err := rows.Err(); err != nil {
		return 0, 1, err
	}
	short := 0
	for tp, end := range ends {
		switch {
		case end == 0 || at[tp] >= end:
		case at[tp] == end-1:
			short = -1
		default:
			return sum, 1, nil
		}
	}
	return sum, short, nil
}
