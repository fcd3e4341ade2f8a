package kafka

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadAll returns every committed event of topic, from the start of the log
// up to where the log stood when ReadAll was called, ordered by partition
// then offset. It is the audit and rebuild path, so it is strict: a record
// that does not decode fails the whole read.
//
// The end of each partition is its last stable offset, not its high
// watermark: a read-committed reader cannot pass an open transaction, so
// waiting for the high watermark could wait for someone else's commit. If
// another producer's transaction is open when ReadAll starts, events it
// later commits are not included.
func ReadAll(ctx context.Context, cfg Config, topic string) ([]Record, error) {
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()

	bounds, err := partitionBounds(ctx, cfg, topic)
	if err != nil {
		return nil, cfg.explain(err)
	}
	pending := map[int32]int64{} // partition → end offset not yet reached
	from := map[int32]kgo.Offset{}
	for p, b := range bounds {
		if b.end > b.start {
			pending[p] = b.end
			from[p] = kgo.NewOffset().At(b.start)
		}
	}
	if len(pending) == 0 {
		return nil, nil
	}

	opts := append(cfg.clientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Commit and abort markers take offsets too; the last offset before
		// the end is often one. Keeping them is how we notice we are done.
		kgo.KeepControlRecords(),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()

	var out []Record
	for len(pending) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("kafka: read %s: %d partitions unfinished: %w", topic, len(pending), err)
		}
		if err := fetchErr(fs); err != nil {
			return nil, err
		}
		for _, r := range fs.Records() {
			end, ok := pending[r.Partition]
			if !ok || r.Offset >= end {
				continue // past the snapshot we were asked for
			}
			if r.Offset >= end-1 {
				delete(pending, r.Partition)
			}
			if r.Attrs.IsControl() {
				continue
			}
			rec, err := decode(r)
			if err != nil {
				return nil, err
			}
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out, nil
}

type bounds struct{ start, end int64 }

// partitionBounds lists each partition's log start and last stable offset.
func partitionBounds(ctx context.Context, cfg Config, topic string) (map[int32]bounds, error) {
	cl, err := kgo.NewClient(cfg.clientOpts()...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: start offsets of %s: %w", topic, translate(err))
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: end offsets of %s: %w", topic, translate(err))
	}
	if len(ends[topic]) == 0 {
		return nil, fmt.Errorf("kafka: %s: %w", topic, ErrUnknownTopic)
	}
	out := map[int32]bounds{}
	for p, e := range ends[topic] {
		s, ok := starts.Lookup(topic, p)
		if !ok {
			return nil, fmt.Errorf("kafka: %s/%d: no start offset listed", topic, p)
		}
		out[p] = bounds{start: s.Offset, end: e.Offset}
	}
	return out, nil
}
