package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector"
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
	pcfg := projector.Config{Kafka: kafka.Config{Brokers: w.brokers, FetchMaxWait: 100 * time.Millisecond, Logger: w.quiet},
		LagInterval: time.Second, ReplayWait: time.Minute, Logger: w.quiet}
	p, err := projector.New(pcfg, pool)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- p.Run(rctx) }()
	folded, last, err := waitFolded(ctx, pool, done)
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

	rep, err := projector.Replay(ctx, pcfg, pool)
	if err != nil {
		r.note(w.out, "projector_replay_eps", "%v", err)
		return nil
	}
	r.ProjectorReplayEPS = f64(float64(rep.Events) / rep.FoldDuration.Seconds())
	fmt.Fprintf(w.out, "projector replay: %d events in %.1fs: %.0f events/s, equal to live: %v\n",
		rep.Events, rep.FoldDuration.Seconds(), *r.ProjectorReplayEPS, rep.Equal)
	if !rep.Equal {
		r.note(w.out, "projector_replay_eps", "the replay's views DIFFER from the live ones")
	}
	return nil
}

// waitFolded polls the projector's offsets until they have not moved for
// 3 s and returns event_log's size with the time they last moved: the live
// projector's catch-up.
func waitFolded(ctx context.Context, pool *pgxpool.Pool, done <-chan error) (int64, time.Time, error) {
	var n int64
	last := time.Now()
	deadline := time.Now().Add(time.Hour)
	for time.Now().Before(deadline) {
		var m int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(next_offset), 0) FROM drove.projector_offsets`).Scan(&m); err != nil {
			return 0, last, err
		}
		if m != n {
			n, last = m, time.Now()
		} else if n > 0 && time.Since(last) > 3*time.Second {
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
