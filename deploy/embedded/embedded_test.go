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
