package notary

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/chain"
	"github.com/drovehq/drove/events/kafka"
)

// ChainedTopics are the topics the notary chains: every topic but its own
// and the compacted ones (heartbeats), whose older records the broker
// drops by design, so that a chain over them would read as broken.
func ChainedTopics() []string {
	return slices.DeleteFunc(events.Topics(), func(t string) bool {
		return t == events.TopicCheckpoints || events.Compacted(t)
	})
}

// Partition names one partition of a topic.
type Partition = kafka.TopicPartition

// recordOf is a data record as the chain hashes it.
func recordOf(r kafka.Raw) chain.Record {
	c := chain.Record{Offset: r.Offset, TimestampMill: r.Time.UnixMilli(), Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, chain.Header{Key: []byte(h.Key), Value: h.Value})
	}
	return c
}

// ReadRaw reads every data record of topics from the start of the log to
// where it stood when called, as stored (commit markers and aborted
// records left out, as a read-committed reader sees the log), by
// partition in offset order. Every partition is listed, empty ones too.
func ReadRaw(ctx context.Context, cfg kafka.Config, topics ...string) (map[Partition][]chain.Record, error) {
	r, err := kafka.NewReader(ctx, cfg, kafka.ReadOptions{Topics: topics})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := map[Partition][]chain.Record{}
	for topic, ps := range r.Partitions() {
		for _, p := range ps {
			out[Partition{Topic: topic, Partition: p}] = nil
		}
	}
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("notary: read: %w", err)
		}
		for _, rec := range b.Records {
			p := Partition{Topic: rec.Topic, Partition: rec.Partition}
			out[p] = append(out[p], recordOf(rec))
		}
	}
}

// ReadCheckpoints reads drove.checkpoints whole: each chained partition's
// checkpoints in log order. A log without the topic has none.
func ReadCheckpoints(ctx context.Context, cfg kafka.Config) (map[Partition][]chain.Checkpoint, error) {
	recs, err := kafka.ReadAll(ctx, cfg, events.TopicCheckpoints)
	if errors.Is(err, kafka.ErrUnknownTopic) {
		return map[Partition][]chain.Checkpoint{}, nil
	}
	if err != nil {
		return nil, err
	}
	// ReadAll orders by partition then offset; a chained partition's
	// checkpoints share one partition (their key), so its order is kept.
	out := map[Partition][]chain.Checkpoint{}
	for _, r := range recs {
		c, ok := func() (events.CheckpointRecorded, bool) {
			p, err := r.Event.DecodePayload()
			if err != nil {
				return events.CheckpointRecorded{}, false
			}
			c, ok := p.(events.CheckpointRecorded)
			return c, ok
		}()
		if !ok {
			return nil, fmt.Errorf("notary: %s/%d@%d is a %s, not a checkpoint", r.Topic, r.Partition, r.Offset, r.Event.Type)
		}
		p := Partition{Topic: c.Topic, Partition: c.Partition}
		out[p] = append(out[p], chain.Checkpoint{CheckpointRecorded: c, Partition: r.Partition, Offset: r.Offset})
	}
	for _, cs := range out {
		slices.SortStableFunc(cs, func(a, b chain.Checkpoint) int {
			return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
		})
	}
	return out, nil
}
