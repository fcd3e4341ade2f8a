package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestPostgresGivesEachTestItsOwnDatabase(t *testing.T) {
	var (
		mu    sync.Mutex
		names = map[string]string{} // subtest -> database
	)
	t.Run("group", func(t *testing.T) {
		for _, name := range []string{"first", "second"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				p := testenv.Postgres(t)
				ctx := t.Context()
				pool := p.Pool(ctx)
				// Same table name in both databases, at the same time.
				if _, err := pool.Exec(ctx, `CREATE TABLE widgets (id int PRIMARY KEY, owner text NOT NULL)`); err != nil {
					t.Fatal(err)
				}
				if _, err := pool.Exec(ctx, `INSERT INTO widgets VALUES (1, $1)`, name); err != nil {
					t.Fatal(err)
				}
				var owners []string
				rows, _ := pool.Query(ctx, `SELECT owner FROM widgets`)
				owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				if len(owners) != 1 || owners[0] != name {
					t.Errorf("widgets in %s = %v, want only [%s]", p.Name, owners, name)
				}
				mu.Lock()
				names[name] = p.Name
				mu.Unlock()
			})
		}
	})
	if names["first"] == "" || names["first"] == names["second"] {
		t.Fatalf("databases = %v, want two different ones", names)
	}

	// Both subtests have ended, so their databases must be gone.
	p := testenv.Postgres(t)
	var left int
	err := p.Pool(t.Context()).QueryRow(t.Context(),
		`SELECT count(*) FROM pg_database WHERE datname IN ($1, $2)`,
		names["first"], names["second"]).Scan(&left)
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d of the subtests' databases %v survived their cleanup", left, names)
	}
}

func TestPostgresURLIsForPgx(t *testing.T) {
	p := testenv.Postgres(t)
	conn, err := pgx.Connect(t.Context(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var db string
	if err := conn.QueryRow(t.Context(), `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db != p.Name {
		t.Errorf("current_database() = %q, want %q", db, p.Name)
	}
	if p.Pool(t.Context()) != p.Pool(t.Context()) {
		t.Error("Pool returned two different pools")
	}
}

// A connection the test forgets to close must not stop the drop.
func TestPostgresDropsDatabaseWithOpenConnections(t *testing.T) {
	var name string
	t.Run("leaky", func(t *testing.T) {
		p := testenv.Postgres(t)
		name = p.Name
		conn, err := pgx.Connect(t.Context(), p.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn // deliberately left open
	})
	p := testenv.Postgres(t)
	var n int
	if err := p.Pool(t.Context()).QueryRow(t.Context(),
		`SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s survived with a connection open", name)
	}
}

func TestKafkaProduceConsume(t *testing.T) {
	k := testenv.Kafka(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	topic := k.CreateTopic(ctx, "events", 3)
	p := k.Producer(t, k.Config(), "producer")
	ev := event("vm-1")
	if err := p.Append(ctx, topic, ev); err != nil {
		t.Fatal(err)
	}
	recs, err := kafka.ReadAll(ctx, k.Config(), topic)
	if err != nil || len(recs) != 1 || recs[0].Event.ID != ev.ID {
		t.Fatalf("read back %v, %v; want the one event", recs, err)
	}
}

// Event sourcing needs transactions, read-committed reading and consumer
// groups (their committed offsets keep executors' checkpoints, their
// membership elects the planner).
func TestKafkaTransactionsAndGroups(t *testing.T) {
	k := testenv.Kafka(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	topic := k.CreateTopic(ctx, "moves", 3)
	p := k.Producer(t, k.Config(), "planner")
	a, b := event("txn-0"), event("txn-1")
	if err := p.Append(ctx, topic, a, b); err != nil {
		t.Fatal(err)
	}
	r, err := kafka.NewReader(ctx, k.Config(), kafka.ReadOptions{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for {
		batch, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += len(batch.Records)
	}
	if n != 2 {
		t.Fatalf("read %d committed events, want 2", n)
	}

	cp, err := kafka.OpenCheckpoint(k.Config(), k.Topic("executor"))
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	at := r.Position()
	if err := cp.Save(ctx, at); err != nil {
		t.Fatal(err)
	}
	if got, err := cp.Load(ctx, topic); err != nil || fmt.Sprint(got) != fmt.Sprint(at) {
		t.Fatalf("checkpoint = %v, %v; want %v", got, err, at)
	}

	elected := make(chan struct{})
	el, err := kafka.JoinElection(k.Config(), kafka.Election{Group: k.Topic("election"), Topic: topic,
		Timeout: 6 * time.Second, Elected: func() { close(elected) }, Deposed: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer el.Leave()
	select {
	case <-elected:
	case <-ctx.Done():
		t.Fatal("the only member of an election was never elected")
	}
}

func event(key string) events.Envelope {
	return events.New(events.RequestApproved{Request: key}, events.WithProducer("test"),
		events.WithReason(events.Reason{Actor: "operator:test", Why: "testing", RequestID: key}))
}

func TestKafkaPrefixesAreUnique(t *testing.T) {
	a, b := testenv.Kafka(t), testenv.Kafka(t)
	if a.TopicPrefix == b.TopicPrefix {
		t.Errorf("two clusters share the prefix %q", a.TopicPrefix)
	}
}
