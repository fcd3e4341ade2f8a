package kafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events"
)

// testTimeout bounds every wait in these tests; none of them sleeps.
const testTimeout = 20 * time.Second

// TestMain runs this package's tests against a real Apache Kafka broker:
// KAFKA_BROKERS (`make test` gives one broker to the whole run), or, when
// it is unset, one that test/tools/kafkabroker starts for this binary,
// which runs again under it. (testenv, which starts brokers for the other
// packages, imports this package, so these tests cannot import it.)
func TestMain(m *testing.M) {
	if os.Getenv("KAFKA_BROKERS") == "" {
		os.Exit(underBroker())
	}
	os.Exit(m.Run())
}

// underBroker runs this test binary again, with its arguments, under
// test/tools/kafkabroker.
func underBroker() int {
	tool := filepath.Join("..", "..", "test", "tools", "kafkabroker")
	cmd := exec.Command("go", append([]string{"run", "./" + filepath.ToSlash(tool), "--", os.Args[0]}, os.Args[1:]...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "events/kafka tests: run under %s: %v\n", tool, err)
		return 1
	}
	return 0
}

// newCluster gives the test topics of the given partition count on the
// broker, in a namespace of its own, and returns a Config for them.
func newCluster(t *testing.T, partitions int32, topics ...string) Config {
	t.Helper()
	cfg := Config{
		Brokers:         strings.Split(os.Getenv("KAFKA_BROKERS"), ","),
		Namespace:       fmt.Sprintf("test-%s-%d-", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), time.Now().UnixNano()),
		ClientID:        "drove-test",
		TransactionalID: "test-" + t.Name(),
		FetchMaxWait:    100 * time.Millisecond,
		AwaitVisible:    true,
	}
	if len(topics) > 0 {
		if err := EnsureTopics(testContext(t), cfg, int(partitions), topics...); err != nil {
			t.Fatalf("create topics %v: %v", topics, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if names, err := ListTopics(ctx, cfg); err == nil {
			_ = DeleteTopics(ctx, cfg, names...)
		}
	})
	return cfg
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func newProducer(t *testing.T, cfg Config) *Producer {
	t.Helper()
	p, err := NewProducer(cfg)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// event returns a valid event keyed by request id req.
func event(req string) events.Envelope {
	return events.New(events.RequestApproved{Request: req},
		events.WithProducer("test"),
		events.WithReason(events.Reason{Actor: "operator:test", Why: "testing", RequestID: req}))
}

func ids(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Event.ID
	}
	return out
}

func envIDs(evs ...events.Envelope) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// readUncommitted returns the first n data records of topic as a
// read-uncommitted reader sees them, proving what the log holds regardless
// of transactions.
func readUncommitted(t *testing.T, ctx context.Context, cfg Config, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumeTopics(cfg.wire(topic)), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read uncommitted: got %d of %d records: %v", len(out), n, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func wait[T any](t *testing.T, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		var zero T
		t.Fatalf("timed out waiting for %s", what)
		return zero
	}
}

func equalIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}
