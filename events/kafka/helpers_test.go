package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events"
)

// testTimeout bounds every wait in these tests; none of them sleeps.
const testTimeout = 20 * time.Second

// newCluster starts an in-process Kafka (franz-go's kfake) with topics of
// the given partition count and returns a Config pointing at it.
func newCluster(t *testing.T, partitions int32, topics ...string) Config {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return Config{
		Brokers:         c.ListenAddrs(),
		ClientID:        "drove-test",
		TransactionalID: "test-" + t.Name(),
		FetchMaxWait:    100 * time.Millisecond,
	}
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
		kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
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
