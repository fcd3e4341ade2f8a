package kafka

import (
	"context"
	"fmt"
)

// Leaders returns the broker id leading each partition of topics, as the
// cluster's metadata says now: for failure tests and benchmarks that kill
// the broker a partition depends on. A partition without a leader is -1.
func Leaders(ctx context.Context, cfg Config, topics ...string) (map[TopicPartition]int32, error) {
	details, err := listTopics(ctx, cfg, topics)
	if err != nil {
		return nil, err
	}
	out := map[TopicPartition]int32{}
	for _, t := range details.Sorted() {
		if t.Err != nil {
			return nil, fmt.Errorf("kafka: partition leaders of %s: %w", cfg.local(t.Topic), translate(t.Err))
		}
		for _, p := range t.Partitions.Sorted() {
			out[TopicPartition{Topic: cfg.local(t.Topic), Partition: p.Partition}] = p.Leader
		}
	}
	return out, nil
}
