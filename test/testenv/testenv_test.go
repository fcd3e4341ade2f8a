package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

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
	topic := k.Topic("events")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	producer := k.Client(kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err := producer.ProduceSync(ctx, &kgo.Record{Key: []byte("vm-1"), Value: []byte("migration started")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	consumer := k.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := pollN(ctx, t, consumer, 1)
	if string(got[0].Key) != "vm-1" || string(got[0].Value) != "migration started" {
		t.Errorf("consumed %q=%q", got[0].Key, got[0].Value)
	}
}

// Event sourcing needs transactions and consumer groups reading only
// committed records.
func TestKafkaTransactionsAndGroups(t *testing.T) {
	k := testenv.Kafka(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	topic := k.CreateTopic(ctx, "moves", 3)

	producer := k.Client(kgo.DefaultProduceTopic(topic), kgo.TransactionalID(k.Topic("planner")))
	for i, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort, kgo.TryCommit} {
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		value := fmt.Sprintf("txn-%d", i)
		if err := producer.ProduceSync(ctx, &kgo.Record{Key: []byte(value), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := producer.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}

	consumer := k.Client(
		kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup(k.Topic("projector")),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	got := pollN(ctx, t, consumer, 2)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	if !seen["txn-0"] || !seen["txn-2"] || seen["txn-1"] {
		t.Errorf("consumed %v, want txn-0 and txn-2 only", seen)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestKafkaPrefixesAreUnique(t *testing.T) {
	a, b := testenv.Kafka(t), testenv.Kafka(t)
	if a.TopicPrefix == b.TopicPrefix {
		t.Errorf("two clusters share the prefix %q", a.TopicPrefix)
	}
}

// pollN polls until n records arrived or ctx ends.
func pollN(ctx context.Context, t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("got %d of %d records: %v", len(got), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("fetch %s/%d: %v", topic, p, err)
			}
		})
		got = append(got, fs.Records()...)
	}
	if len(got) > n {
		t.Errorf("got %d records, want %d", len(got), n)
	}
	return got
}
