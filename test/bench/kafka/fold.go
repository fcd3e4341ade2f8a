package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/bench/eventlog"
)

// measureFold appends the workload's log to the broker (in a namespace of
// its own) and folds it with projector.Replay into a database of its own:
// the fold rate is Report.Events / Report.FoldDuration, as
// test/bench/projector reports it.
func measureFold(ctx context.Context, in *infra, b namedBroker, w *eventlog.Log, per int, stdout io.Writer) (*foldResult, error) {
	kcfg := b.cfg
	kcfg.Namespace = "fold."
	if err := kafka.EnsureTopics(ctx, kcfg, 3, events.Topics()...); err != nil {
		return nil, err
	}
	res := &foldResult{}
	began := time.Now()
	lcfg := kcfg
	lcfg.TransactionalID = "bench-loader"
	txs, err := eventlog.Append(ctx, lcfg, w.Txs, per)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	res.AppendS = time.Since(began).Seconds()
	fmt.Fprintf(stdout, "%s: appended %d events in %d transactions in %.1fs\n", b.name, w.Count, txs, res.AppendS)

	db := "fold_" + b.name
	if err := in.pg.EnsureDatabase(ctx, db); err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, in.pg.URL(db))
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := projector.ApplySchema(ctx, pool, "drove"); err != nil {
		return nil, err
	}
	kcfg.FetchMaxWait = 100 * time.Millisecond
	// No live projector runs: Replay compares with empty views, which
	// the bench does not ask about; it only times the fold.
	pcfg := projector.Config{Kafka: kcfg, LagInterval: time.Second, ReplayWait: -1, Logger: quiet}
	brokerDir := ""
	if b.name == "apache" {
		brokerDir = in.apacheDir()
	}
	cpu := readCPU(in.pg.DataDir, brokerDir)
	rep, err := projector.Replay(ctx, pcfg, pool)
	res.CPU = readCPU(in.pg.DataDir, brokerDir).sub(cpu).json()
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if rep.Events < w.Count {
		return nil, fmt.Errorf("replay folded %d records of a %d-event log", rep.Events, w.Count)
	}
	res.FoldS = rep.FoldDuration.Seconds()
	res.EPS = float64(rep.Events) / res.FoldS
	fmt.Fprintf(stdout, "%s: projector folded %d events in %.2fs = %.0f events/s (CPU: bench %.1fs, postgres %.1fs, broker JVM %.1fs)\n",
		b.name, rep.Events, res.FoldS, res.EPS, res.CPU.Bench, res.CPU.Postgres, res.CPU.BrokerJVM)
	return res, nil
}

// foldResult is one broker's fold: its rate, how long the log took to
// append and the fold itself, and the CPU spent during Replay.
type foldResult struct {
	EPS     float64 `json:"events_per_second"`
	AppendS float64 `json:"append_seconds"`
	FoldS   float64 `json:"fold_seconds"`
	CPU     foldCPU `json:"cpu"`
}

// foldCPU is cpuTimes as the JSON says it; BrokerJVM is 0 on kfake, whose
// CPU is the bench's.
type foldCPU struct {
	Bench     float64 `json:"bench_seconds"`
	Postgres  float64 `json:"postgres_seconds"`
	BrokerJVM float64 `json:"broker_jvm_seconds"`
}

func (c cpuTimes) json() foldCPU { return foldCPU{c.self, c.postgres, c.broker} }
