package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/test/testenv"
)

// The copy of a log on Apache Kafka holds what a read-committed reader of
// the original sees, partition by partition in the same order: the
// committed events, not an aborted transaction's.
func TestMirrorCopiesTheCommittedLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := embedded.StartBroker(embedded.Broker{Dir: filepath.Join(t.TempDir(), "kfake"), Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	from := kafka.Config{Brokers: b.Addrs(), TransactionalID: "mirror-test"}
	if err := kafka.EnsureTopics(ctx, from, 3, events.Topics()...); err != nil {
		t.Fatal(err)
	}
	p, err := kafka.NewProducer(from)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ev := func(p events.Payload) events.Envelope {
		return events.New(p, events.WithProducer("mirror-test"), events.WithReason(events.Reason{Actor: "test", Why: "a log to copy"}))
	}
	for i := range 40 {
		node := []string{"n1", "n2", "n3", "n4"}[i%4]
		if err := p.Append(ctx, events.TopicInventory, ev(events.NodeUpdated{Name: node, Group: "g1", Total: events.Resources{MemoryMiB: int64(1024 * (i + 1))}})); err != nil {
			t.Fatal(err)
		}
	}
	aborted := ev(events.NodeUpdated{Name: "n9", Group: "g1"})
	raw, err := events.Encode(aborted)
	if err != nil {
		t.Fatal(err)
	}
	if err := kafka.WriteAborted(ctx, from, "mirror-test-aborted",
		[]kafka.Raw{{Topic: events.TopicInventory, Key: []byte("n9"), Value: raw}}); err != nil {
		t.Fatal(err)
	}

	_, to := testenv.Events(t, ctx)
	n, err := mirror(ctx, kafka.Config{Brokers: b.Addrs()}, to, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n != 40 {
		t.Errorf("copied %d records, want the 40 committed", n)
	}
	want, got := byPartition(t, ctx, kafka.Config{Brokers: b.Addrs()}), byPartition(t, ctx, to)
	for tp, ids := range want {
		if !slices.Equal(got[tp], ids) {
			t.Errorf("%s: copy holds %v, want %v", tp, got[tp], ids)
		}
	}
	if len(got) != len(want) {
		t.Errorf("copy has %d partitions with events, the original %d", len(got), len(want))
	}
}

// byPartition is the inventory's event ids on cfg, by partition in log
// order.
func byPartition(t *testing.T, ctx context.Context, cfg kafka.Config) map[kafka.TopicPartition][]string {
	t.Helper()
	recs, err := kafka.ReadAll(ctx, cfg, events.TopicInventory)
	if err != nil {
		t.Fatal(err)
	}
	out := map[kafka.TopicPartition][]string{}
	for _, r := range recs {
		tp := kafka.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		out[tp] = append(out[tp], r.Event.ID)
	}
	return out
}
