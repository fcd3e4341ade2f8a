package notary

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/chain"
	"github.com/drovehq/drove/events/kafka"
)

// ChainedTopics are the topics the notary chains: every topic but its own.
func ChainedTopics() []string {
	return slices.DeleteFunc(events.Topics(), func(t string) bool { return t == events.TopicCheckpoints })
}

// Partition names one partition of a topic.
type Partition struct {
	Topic     string
	Partition int32
}

// recordOf is a fetched record as the chain hashes it.
func recordOf(r *kgo.Record) chain.Record {
	c := chain.Record{Offset: r.Offset, TimestampMill: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, chain.Header{Key: []byte(h.Key), Value: h.Value})
	}
	return c
}

// client is a read-committed franz-go client of cfg; opts add to it.
func client(cfg kafka.Config, opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID(cfg.ClientID),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}
	if cfg.DialTimeout > 0 {
		base = append(base, kgo.DialTimeout(cfg.DialTimeout))
	}
	if cfg.FetchMaxWait > 0 {
		base = append(base, kgo.FetchMaxWait(cfg.FetchMaxWait))
	}
	cl, err := kgo.NewClient(append(append(base, cfg.DialOpts()...), opts...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: kafka: %w", ErrInvalidConfig, err)
	}
	return cl, nil
}

// ends lists the last stable offset of every partition of topics: what a
// read-committed reader can reach.
func ends(ctx context.Context, cl *kgo.Client, topics ...string) (map[Partition]int64, error) {
	listed, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("notary: list end offsets: %w", err)
	}
	out := map[Partition]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[Partition{o.Topic, o.Partition}] = o.Offset })
	return out, nil
}

// ReadRaw reads every data record of topics from offset zero to where the
// log stood when called, as stored (commit markers and aborted records
// left out, as a read-committed reader sees the log), by partition in
// offset order.
func ReadRaw(ctx context.Context, cfg kafka.Config, topics ...string) (map[Partition][]chain.Record, error) {
	meta, err := client(cfg)
	if err != nil {
		return nil, err
	}
	end, err := ends(ctx, meta, topics...)
	meta.Close()
	if err != nil {
		return nil, err
	}
	out := map[Partition][]chain.Record{}
	from := map[string]map[int32]kgo.Offset{}
	pending := map[Partition]int64{}
	for p, e := range end {
		out[p] = nil
		if e > 0 {
			pending[p] = e
			if from[p.Topic] == nil {
				from[p.Topic] = map[int32]kgo.Offset{}
			}
			from[p.Topic][p.Partition] = kgo.NewOffset().AtStart()
		}
	}
	if len(pending) == 0 {
		return out, nil
	}
	// Control records are kept so the read knows when it reached each
	// end (a commit marker is often the last offset); they are not chained.
	cl, err := client(cfg, kgo.ConsumePartitions(from), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	for len(pending) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("notary: read: %d partitions unfinished: %w", len(pending), err)
		}
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			errs = append(errs, fmt.Errorf("notary: fetch %s/%d: %w", t, p, err))
		})
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		for _, r := range fs.Records() {
			p := Partition{r.Topic, r.Partition}
			e, ok := pending[p]
			if !ok || r.Offset >= e {
				continue
			}
			if r.Offset >= e-1 {
				delete(pending, p)
			}
			if !r.Attrs.IsControl() {
				out[p] = append(out[p], recordOf(r))
			}
		}
	}
	return out, nil
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
		p := Partition{c.Topic, c.Partition}
		out[p] = append(out[p], chain.Checkpoint{CheckpointRecorded: c, Partition: r.Partition, Offset: r.Offset})
	}
	for _, cs := range out {
		slices.SortStableFunc(cs, func(a, b chain.Checkpoint) int {
			return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
		})
	}
	return out, nil
}
