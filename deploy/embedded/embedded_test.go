package embedded

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The embedded Postgres keeps its data across a stop and a start.
func TestPostgresKeepsStateAcrossRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The server runs as the postgres user when the test runs as root: it
	// must be able to reach its directory.
	tmp := t.TempDir()
	for d := tmp; d != "/"; d = filepath.Dir(d) {
		if d == os.TempDir() {
			break
		}
		_ = os.Chmod(d, 0o755)
	}
	dir := filepath.Join(tmp, "pg")
	start := func() *PostgresServer {
		s, err := StartPostgres(ctx, Postgres{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
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

// The embedded broker keeps its topics across a stop and a start.
func TestBrokerKeepsStateAcrossRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "kafka")
	b, err := StartBroker(Broker{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "kept", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	b.Stop()
	if entries, _ := os.ReadDir(dir); len(entries) == 0 {
		t.Fatal("the broker wrote nothing to its directory")
	}

	b, err = StartBroker(Broker{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics("kept"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	var got []string
	fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != 1 || got[0] != "hello" {
		t.Fatalf("after restart read %v", got)
	}
}
