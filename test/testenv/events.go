package testenv

import (
	"context"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// Events gives the test a Kafka cluster (see Kafka) holding every Drove
// topic, with three partitions each, and a kafka.Config for it that suits
// tests: consumers see an append within 50 ms (FetchMaxWait), and the
// partitions of a consumer the test stops move on after a 10 s session.
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
