package projector_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	. "github.com/drovehq/drove/projector"
	"github.com/drovehq/drove/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testTimeout bounds every wait in these tests; none of them sleeps.
const testTimeout = 60 * time.Second

// env is one test's Kafka, Postgres, producer and projector config.
type env struct {
	t    testing.TB
	ctx  context.Context
	pool *pgxpool.Pool
	k    *testenv.KafkaCluster
	cfg  Config
	prod *kafka.Producer
}

func newEnv(t *testing.T) *env { return newEnvTB(t) }

func newEnvTB(t testing.TB) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*testTimeout)
	t.Cleanup(cancel)
	pool := testenv.Postgres(t).Pool(ctx)
	k, kcfg := testenv.Events(t, ctx)
	prod := k.Producer(t, kcfg, "projector-test")
	cfg := Config{
		Kafka:       kcfg,
		LagInterval: 100 * time.Millisecond,
		ReplayWait:  20 * time.Second,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if err := ApplySchema(ctx, pool, "drove"); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, pool: pool, k: k, cfg: cfg, prod: prod}
}

// ev builds a valid envelope for payload, at time at (seconds after a fixed
// epoch) so tests can order events by time.
func ev(p events.Payload, at int, request string) events.Envelope {
	return events.New(p,
		events.WithProducer("test"),
		events.WithTime(time.Date(2025, 1, 1, 0, 0, at, 0, time.UTC)),
		events.WithReason(events.Reason{Actor: "operator:alice", Why: "testing", RequestID: request}))
}

// append writes evs, each to its type's topic, in one transaction.
func (e *env) append(evs ...events.Envelope) {
	e.t.Helper()
	msgs := make([]kafka.Message, len(evs))
	for i, v := range evs {
		topic, err := v.Topic()
		if err != nil {
			e.t.Fatal(err)
		}
		msgs[i] = kafka.Message{Topic: topic, Event: v}
	}
	if err := e.prod.AppendBatch(e.ctx, msgs...); err != nil {
		e.t.Fatalf("append: %v", err)
	}
}

// start runs a projector until the returned stop is called; stop returns
// Run's error.
func (e *env) start(p *Projector) (stop func() error) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var err error
	var stopped bool
	stop = func() error {
		if !stopped {
			cancel()
			err = <-done
			stopped = true
		}
		return err
	}
	e.t.Cleanup(func() { _ = stop() })
	return stop
}

func (e *env) projector(mod func(*Config)) *Projector {
	e.t.Helper()
	cfg := e.cfg
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg, e.pool)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// waitCaughtUp waits until the schema's offsets reach the log's end.
func (e *env) waitCaughtUp(schema string) {
	e.t.Helper()
	for {
		done, err := CaughtUp(e.ctx, e.cfg, e.pool, schema)
		if err != nil {
			e.t.Fatal(err)
		}
		if done {
			return
		}
		select {
		case <-e.ctx.Done():
			e.t.Fatalf("projector did not catch up")
		case <-time.After(20 * time.Millisecond): // polling a condition under a deadline
		}
	}
}

// run starts a projector, waits for it to fold the whole log, and stops it.
func (e *env) run() {
	e.t.Helper()
	stop := e.start(e.projector(nil))
	e.waitCaughtUp("drove")
	if err := stop(); err != nil {
		e.t.Fatalf("Run: %v", err)
	}
}

// replay runs Replay and fails the test unless the views equal it.
func (e *env) replayEqual() Report {
	e.t.Helper()
	rep, err := Replay(e.ctx, e.cfg, e.pool)
	if err != nil {
		e.t.Fatalf("Replay: %v", err)
	}
	if !rep.Equal {
		for _, tr := range rep.Tables {
			if !tr.Equal {
				e.t.Errorf("table %s differs: live %d rows %s, replay %d rows %s",
					tr.Name, tr.LiveRows, tr.LiveChecksum, tr.ReplayRows, tr.ReplayChecksum)
			}
		}
		e.t.Fatalf("Replay not equal (live behind: %v %v)", rep.LiveBehind, rep.Behind)
	}
	return rep
}

// get scans the single row sql returns in schema "drove".
func (e *env) get(sql string, dest ...any) {
	e.t.Helper()
	if err := Get(e.ctx, e.pool, "drove", sql, dest...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}
