package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/sim"
)

// planWait bounds the wait for one request's first opcode, and then for
// its end.
const planWait = 2 * time.Minute

// measurePlan runs the whole system on the broker (the demo cluster,
// simulated executors on a fast clock) and times requests, one at a
// time, from their append to the planner's first OpcodeDispatched. The
// first request is a warm-up (the planner's first state build), not
// counted.
func measurePlan(ctx context.Context, in *infra, b namedBroker, n int, stdout io.Writer) ([]float64, error) {
	kcfg := b.cfg
	kcfg.Namespace = "plan."
	db := "plan_" + b.name
	if err := in.pg.EnsureDatabase(ctx, db); err != nil {
		return nil, err
	}
	simCfg := allinone.DemoSim()
	// Moves end within a second: each request's moves are over before
	// the next is timed, and no slot is still held by the last one.
	simCfg.Clock = sim.FastClock(100)
	sys, err := allinone.Start(ctx, allinone.Config{Kafka: kcfg, DatabaseURL: in.pg.URL(db), Logger: quiet,
		Seed: allinone.DemoCluster, Sim: simCfg, Partitions: 3})
	if err != nil {
		return nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = sys.Stop(sctx)
	}()
	w, err := newWatcher(ctx, kcfg, events.TopicOpcodes, events.TopicRequests)
	if err != nil {
		return nil, err
	}
	defer w.close()
	rcfg := kcfg
	rcfg.TransactionalID = "bench-requests"
	prod, err := kafka.NewProducer(rcfg)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	var samples []float64
	for i := 0; i <= n; i++ {
		// A node of each group in turn, none twice.
		node := sys.Nodes[(i*9)%len(sys.Nodes)]
		ms, err := timeRequest(ctx, prod, w, node, i)
		if err != nil {
			return samples, fmt.Errorf("request %d (evacuate %s): %w", i, node, err)
		}
		if i == 0 {
			fmt.Fprintf(stdout, "%s: warm-up request to first opcode %.0f ms\n", b.name, ms)
			continue
		}
		samples = append(samples, ms)
	}
	fmt.Fprintf(stdout, "%s: request to first opcode (ms): %.0f\n", b.name, samples)
	return samples, nil
}

// timeRequest appends an evacuation of node and returns the milliseconds
// from just before the append to the time the planner gave its first
// OpcodeDispatched; it then waits for the request's end.
func timeRequest(ctx context.Context, prod *kafka.Producer, w *watcher, node string, i int) (float64, error) {
	id := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
	ev := events.New(events.EvacuationRequested{Request: id, Nodes: []string{node}, Mode: events.EvacAll},
		events.WithProducer("bench"), events.WithReason(events.Reason{Actor: "operator:bench", Why: "latency", RequestID: id}))
	t0 := time.Now()
	if err := prod.Append(ctx, events.TopicRequests, ev); err != nil {
		return 0, err
	}
	var first time.Time
	_, err := w.waitFor(ctx, planWait, func(r kafka.Record) bool {
		if d, err := events.As[events.OpcodeDispatched](r.Event); err == nil && d.Request == id && first.IsZero() {
			first = r.Event.Time
		}
		return isFinished(r, id)
	})
	if first.IsZero() {
		return 0, fmt.Errorf("no opcode dispatched: %w", errOr(err, errors.New("the request ended without one")))
	}
	return float64(first.Sub(t0).Microseconds()) / 1000, err
}

func isFinished(r kafka.Record, id string) bool {
	if f, err := events.As[events.RequestFinished](r.Event); err == nil {
		return f.Request == id
	}
	if f, err := events.As[events.RequestRejected](r.Event); err == nil {
		return f.Request == id
	}
	return false
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}
