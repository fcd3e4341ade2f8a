package testenv

import (
	"context"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner/inventory"
)

// Events gives the test a Kafka cluster (see Kafka) holding every Drove
// topic, with three partitions each, and a kafka.Config for it that suits
// tests (see KafkaCluster.Config).
func Events(t testing.TB, ctx context.Context) (*KafkaCluster, kafka.Config) {
	t.Helper()
	k := Kafka(t)
	cfg := k.Config()
	if err := kafka.EnsureTopics(ctx, cfg, 3, events.Topics()...); err != nil {
		t.Fatalf("testenv: create the Drove topics: %v", err)
	}
	return k, cfg
}

// Producer is a transactional producer on cfg, closed when the test ends.
// Its transactional ID is id, prefixed like the test's topics so that
// tests sharing an external cluster do not fence each other.
func (k *KafkaCluster) Producer(t testing.TB, cfg kafka.Config, id string) *kafka.Producer {
	t.Helper()
	cfg.TransactionalID = k.Topic(id)
	p, err := kafka.NewProducer(cfg)
	if err != nil {
		t.Fatalf("testenv: producer %s: %v", id, err)
	}
	t.Cleanup(p.Close)
	return p
}

// Facts are instance's facts as the planner service puts them in a
// dispatch (events.InstanceFacts): its inventory fold (planner/inventory)
// of drove.inventory as it stands now, with the groups of nodes. Tests
// that dispatch opcodes or migration phases by hand use it, so an
// executor reads the facts a planner would give it.
func Facts(t testing.TB, ctx context.Context, cfg kafka.Config, instance string, nodes ...string) *events.InstanceFacts {
	t.Helper()
	recs, err := kafka.ReadAll(ctx, cfg, events.TopicInventory)
	if err != nil {
		t.Fatalf("testenv: read the inventory: %v", err)
	}
	inv := inventory.New()
	for _, r := range recs {
		p, err := r.Event.DecodePayload()
		if err != nil {
			t.Fatalf("testenv: %s: %v", r, err)
		}
		inv.Apply(p, inventory.Pos{Time: r.Event.Time, Partition: r.Partition, Offset: r.Offset})
	}
	return inv.Facts(instance, nodes...)
}

// Envelopes returns every committed event of topic, in the order read.
func Envelopes(t testing.TB, ctx context.Context, cfg kafka.Config, topic string) []events.Envelope {
	t.Helper()
	recs, err := kafka.ReadAll(ctx, cfg, topic)
	if err != nil {
		t.Fatalf("testenv: read %s: %v", topic, err)
	}
	out := make([]events.Envelope, len(recs))
	for i, r := range recs {
		out[i] = r.Event
	}
	return out
}

// Read returns every committed event of type T (from T's topic) that keep
// holds, decoded, in the order read; a nil keep keeps all (see OfType).
func Read[T events.Payload](t testing.TB, ctx context.Context, cfg kafka.Config, keep func(T) bool) []T {
	t.Helper()
	var zero T
	topic, err := events.TopicOf(zero.Type())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return OfType(t, Envelopes(t, ctx, cfg, topic), keep)
}

// OfType returns the events of type T among envs that keep holds,
// decoded, in order; a nil keep keeps all. An event of T's type that does
// not decode fails the test, where a loop that skipped whatever events.As
// refused would hide it. A test that looks for several types on one topic
// reads it once (Envelopes) and picks each type from that.
func OfType[T events.Payload](t testing.TB, envs []events.Envelope, keep func(T) bool) []T {
	t.Helper()
	var zero T
	var out []T
	for _, e := range envs {
		if e.Type != zero.Type() {
			continue
		}
		v, err := events.As[T](e)
		if err != nil {
			t.Fatalf("testenv: %s %s: %v", e.Type, e.ID, err)
		}
		if keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	return out
}
