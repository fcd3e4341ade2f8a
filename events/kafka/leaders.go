package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Leaders returns the broker id leading each partition of topics, as the
// cluster's metadata says now: for failure tests and benchmarks that kill
// the broker a partition depends on. A partition without a leader is -1.
func Leaders(ctx context.Context, cfg Config, topics ...string) (map[TopicPartition]int32, error) {
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx, cfg.wires(topics)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: partition leaders: %w", translate(err))
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
