package kafka

import (
	"slices"
	"testing"
)

// Leaders names a listed broker for every partition of a topic, under the
// topic's name without the namespace.
func TestLeadersNamesEachPartitionsBroker(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 3, topic)
	leaders, err := Leaders(ctx, cfg, topic)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := BrokerIDs(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders of %d partitions, want 3: %v", len(leaders), leaders)
	}
	for p := range int32(3) {
		id, ok := leaders[TopicPartition{Topic: topic, Partition: p}]
		if !ok || !slices.Contains(ids, id) {
			t.Fatalf("partition %d: leader %d (listed: %v); the brokers are %v", p, id, ok, ids)
		}
	}
}
