package embedded

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// The embedded Postgres keeps its data across a stop and a start, also in
// a private directory (a clone in root's 0700 home), which the server's
// user cannot enter and which stays private.
func TestPostgresKeepsStateAcrossRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "clone", ".drove", "postgres")
	start := func() *PostgresServer {
		s, err := StartPostgres(ctx, Postgres{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if s.DataDir != filepath.Join(dir, "data") {
				_ = os.RemoveAll(filepath.Dir(s.DataDir))
			}
		})
		return s
	}
	s := start()
	if fi, err := os.Stat(home); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the private directory was changed: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION")); err != nil {
		t.Fatalf("dir/data does not lead to the cluster: %v", err)
	}
	if err := s.EnsureDatabase(ctx, "drove"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, s.URL("drove"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s = start()
	defer s.Stop()
	if err := s.EnsureDatabase(ctx, "drove"); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, s.URL("drove"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: %v, %d", err, v)
	}
}

// The embedded broker keeps its topics, their partition counts and
// configuration, and their events across a stop and a start: a second
// EnsureTopics finds the log kept forever and runs.
func TestBrokerKeepsStateAcrossRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "kafka")
	b, err := StartBroker(Broker{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg := kafka.Config{Brokers: b.Addrs(), TransactionalID: "embedded-test"}
	if err := kafka.EnsureTopics(ctx, cfg, 5, events.TopicRequests); err != nil {
		t.Fatal(err)
	}
	p, err := kafka.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ev := events.New(events.RequestApproved{Request: "r1"}, events.WithProducer("test"),
		events.WithReason(events.Reason{Actor: "operator:test", Why: "testing", RequestID: "r1"}))
	if err := p.Append(ctx, events.TopicRequests, ev); err != nil {
		t.Fatal(err)
	}
	p.Close()
	b.Stop()
	if entries, _ := os.ReadDir(dir); len(entries) == 0 {
		t.Fatal("the broker wrote nothing to its directory")
	}

	b, err = StartBroker(Broker{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	cfg.Brokers = b.Addrs()
	if err := kafka.EnsureTopics(ctx, cfg, 3, events.TopicRequests); err != nil {
		t.Fatalf("EnsureTopics after restart: %v", err)
	}
	recs, err := kafka.ReadAll(ctx, cfg, events.TopicRequests)
	if err != nil || len(recs) != 1 || recs[0].Event.ID != ev.ID {
		t.Fatalf("after restart read %v, %v", recs, err)
	}
	r, err := kafka.NewReader(ctx, cfg, kafka.ReadOptions{Topics: []string{events.TopicRequests}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := len(r.Ends()); n != 5 {
		t.Fatalf("after restart the topic has %d partitions, want 5", n)
	}
}

// Kill returns only once the postmaster's backends are gone too, so the
// server starts again at once on the same data, through crash recovery
// (test/chaos's restart found a backend still holding the shared memory).
func TestPostgresKilledStartsAgainAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	s, err := StartPostgres(ctx, Postgres{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // backends beside the postmaster
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
	}
	kids := childrenOf(s.cmd.Process.Pid)
	if len(kids) < 3 {
		t.Fatalf("the server has %d processes beside the postmaster; want its 3 backends at least", len(kids))
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if p, ok := readProc(k); ok && !p.zombie {
			t.Fatalf("process %d of the server alive after Kill", k)
		}
	}
	again, err := StartPostgres(ctx, Postgres{Dir: dir, Port: s.Port})
	if err != nil {
		t.Fatalf("restart after Kill: %v", err)
	}
	defer again.Stop()
	conn, err := pgx.Connect(ctx, again.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
