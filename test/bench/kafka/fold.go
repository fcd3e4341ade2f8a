package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector"
)

// measureFold appends the workload's log to the broker (in a namespace of
// its own) and folds it with projector.Replay into a database of its own:
// the fold rate is Report.Events / Report.FoldDuration, as
// test/bench/projector reports it.
func measureFold(ctx context.Context, in *infra, b namedBroker, w *workload, per int, stdout io.Writer) (eps, appendS float64, err error) {
	kcfg := b.cfg
	kcfg.Namespace = "fold."
	if err := kafka.EnsureTopics(ctx, kcfg, 3, events.Topics()...); err != nil {
		return 0, 0, err
	}
	began := time.Now()
	lcfg := kcfg
	lcfg.TransactionalID = "bench-loader"
	txs, err := appendLog(ctx, lcfg, w.txs, per)
	if err != nil {
		return 0, 0, fmt.Errorf("append: %w", err)
	}
	appendS = time.Since(began).Seconds()
	fmt.Fprintf(stdout, "%s: appended %d events in %d transactions in %.1fs\n", b.name, w.count, txs, appendS)

	db := "fold_" + b.name
	if err := in.pg.EnsureDatabase(ctx, db); err != nil {
		return 0, 0, err
	}
	pool, err := pgxpool.New(ctx, in.pg.URL(db))
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	if err := projector.ApplySchema(ctx, pool, "drove"); err != nil {
		return 0, 0, err
	}
	kcfg.FetchMaxWait = 100 * time.Millisecond
	// No live projector runs: Replay compares with empty views, which
	// the bench does not ask about; it only times the fold.
	pcfg := projector.Config{Kafka: kcfg, LagInterval: time.Second, ReplayWait: -1, Logger: quiet}
	rep, err := projector.Replay(ctx, pcfg, pool)
	if err != nil {
		return 0, 0, fmt.Errorf("replay: %w", err)
	}
	if rep.Events < w.count {
		return 0, 0, fmt.Errorf("replay folded %d records of a %d-event log", rep.Events, w.count)
	}
	eps = float64(rep.Events) / rep.FoldDuration.Seconds()
	fmt.Fprintf(stdout, "%s: projector folded %d events in %.2fs = %.0f events/s\n", b.name, rep.Events, rep.FoldDuration.Seconds(), eps)
	return eps, appendS, nil
}

// appendLog appends the workload's transactions, merging consecutive ones
// until a transaction holds at least per events, and returns how many
// transactions it appended.
func appendLog(ctx context.Context, kcfg kafka.Config, txs [][]kafka.Message, per int) (int, error) {
	prod, err := kafka.NewProducer(kcfg)
	if err != nil {
		return 0, err
	}
	defer prod.Close()
	n := 0
	var cur []kafka.Message
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		n++
		err := prod.AppendBatch(ctx, cur...)
		cur = cur[:0]
		return err
	}
	for _, tx := range txs {
		cur = append(cur, tx...)
		if len(cur) >= per {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	return n, flush()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
