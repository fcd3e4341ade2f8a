// Package system is what the benchmarks that drive Drove's whole system
// over HTTP (live, zfs) share: starting it over a real Apache Kafka
// broker and the embedded Postgres (deploy/allinone's services, the
// gateway behind a local HTTP server) and running an automatic
// per-instance migration through it as a user would.
package system

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner"
)

// System is the whole system, running until Stop.
type System struct {
	API     *client.Client
	Brokers []string // the broker's, to read the log directly
	// BeforeMove, if set, runs before each move of MoveBackAndForth
	// (after the one before it is finalized): what a bench measures beside
	// the running system between its moves.
	BeforeMove func(from, to string) error
	stop       func()
}

// Start starts the whole system in tmp, seeded with seed, each node's
// executor with driver.
func Start(ctx context.Context, tmp string, seed *planner.Cluster, driver func(context.Context, string) (executor.Driver, error)) (*System, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for d := tmp; d != "/" && d != filepath.Dir(os.TempDir()); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755) // Postgres runs as postgres when we are root
	}
	broker, err := apachekafka.Start(ctx, apachekafka.Options{Dir: filepath.Join(tmp, "kafka")})
	if err != nil {
		return nil, err // it says how to fetch the broker
	}
	stopBroker := func() { _ = broker.Stop(10 * time.Second) }
	pg, err := embedded.StartPostgres(ctx, embedded.Postgres{Dir: filepath.Join(tmp, "pg")})
	if err != nil {
		stopBroker()
		return nil, err
	}
	stopInfra := func() { _ = pg.Stop(); stopBroker() }
	if err := pg.EnsureDatabase(ctx, "drove"); err != nil {
		stopInfra()
		return nil, err
	}
	sys, err := allinone.Start(ctx, allinone.Config{Kafka: kafka.Config{Brokers: broker.Brokers()}, DatabaseURL: pg.URL("drove"), Logger: quiet,
		Seed: func() *planner.Cluster { return seed }, Driver: driver})
	if err != nil {
		stopInfra()
		return nil, err
	}
	srv := httptest.NewServer(sys.Handler)
	return &System{API: client.New(srv.URL, "bench"), Brokers: broker.Brokers(), stop: func() {
		srv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = sys.Stop(sctx)
		stopInfra()
	}}, nil
}

// Stop stops the system and its broker and Postgres.
func (s *System) Stop() { s.stop() }

// Move is a migration made through the system: its record, how long it
// took from the command to the record's success, and what action=estimate
// predicted just before the command.
type Move struct {
	*wire.InstanceMigration
	Took      time.Duration
	Predicted wire.Estimate
}

// Migrate runs an automatic migration of instance to target over HTTP,
// once the views know both, asking for its estimate first.
func (s *System) Migrate(ctx context.Context, instance, target string) (*Move, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for _, path := range []string{"/v1/instances/" + instance, "/v1/nodes/" + target} {
		for { // the views catch up with the seeded inventory
			var v struct {
				Name string `json:"name"`
			}
			err := s.API.Get(ctx, path, &v)
			if err == nil && v.Name != "" {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s is not in the views: %v", path, err)
			}
			time.Sleep(200 * time.Millisecond) // polling the views, with a deadline
		}
	}
	opts := client.MigrateOptions{Target: target, Reason: "bench"}
	est, err := s.API.Estimate(ctx, instance, opts)
	if err != nil {
		return nil, fmt.Errorf("estimate: %w", err)
	}
	t0 := time.Now()
	a, err := s.API.Migrate(ctx, instance, "automatic", opts)
	if err != nil {
		return nil, err
	}
	fmt.Printf("system: automatic migration %s of %s to %s (predicted downtime %.0f ms) ...\n",
		a.Migration, instance, target, est.DowntimeSeconds*1000)
	deadline = time.Now().Add(20 * time.Minute)
	for {
		m, err := s.API.Migration(ctx, a.Migration)
		if err == nil {
			switch m.State {
			case "successful":
				return &Move{InstanceMigration: m, Took: time.Since(t0), Predicted: *est}, nil
			case "failed", "aborted":
				return nil, fmt.Errorf("migration %s ended %s: %s %s", m.ID, m.State, m.Message, m.Error)
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("migration %s did not end in time (%v)", a.Migration, err)
		}
		time.Sleep(100 * time.Millisecond) // polling the record, with a deadline
	}
}

// MoveBackAndForth migrates instance from a to b, then back, n moves in
// all, each with its estimate first: the moves after the first are
// predicted from what the ones before them measured.
func (s *System) MoveBackAndForth(ctx context.Context, instance, a, b string, n int) ([]*Move, error) {
	var out []*Move
	for i := range max(n, 1) {
		from, to := a, b
		if i%2 == 1 {
			from, to = b, a
		}
		if i > 0 { // the instance takes no other migration until its last is finalized
			if err := s.Finalize(ctx, instance, out[i-1].ID); err != nil {
				return out, fmt.Errorf("finalizing move %d of %d: %w", i, n, err)
			}
		}
		if s.BeforeMove != nil {
			if err := s.BeforeMove(from, to); err != nil {
				return out, fmt.Errorf("before move %d of %d: %w", i+1, n, err)
			}
		}
		m, err := s.Migrate(ctx, instance, to)
		if err != nil {
			return out, fmt.Errorf("move %d of %d: %w", i+1, n, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Finalize finalizes instance's migration id (the source drops its kept
// copy) and waits until its record says so.
func (s *System) Finalize(ctx context.Context, instance, id string) error {
	if _, err := s.API.Migrate(ctx, instance, "finalize", client.MigrateOptions{Reason: "bench"}); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m, err := s.API.Migration(ctx, id)
		if err == nil && m.Finalized {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("migration %s not finalized in time (%v)", id, err)
		}
		time.Sleep(100 * time.Millisecond) // polling the record, with a deadline
	}
}

var downtimeRE = regexp.MustCompile(`after (\d+) ms down`)

// Downtime is the downtime in milliseconds that a migration's record
// says it had: its downtime_ms, else its message's "... after N ms
// down"; -1 when it says none.
func Downtime(m *wire.InstanceMigration) int64 {
	if m.DowntimeMS > 0 {
		return m.DowntimeMS
	}
	if dm := downtimeRE.FindStringSubmatch(m.Message); dm != nil {
		n, _ := strconv.ParseInt(dm[1], 10, 64)
		return n
	}
	return -1
}
