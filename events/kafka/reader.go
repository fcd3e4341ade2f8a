package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
)

// ReadAll returns every committed event of topic, from the start of the log
// up to where the log stood when ReadAll was called, ordered by partition
// then offset. It is the audit and rebuild path, so it is strict: a record
// that does not decode fails the whole read. It is a Reader without Follow.
//
// The end of each partition is its last stable offset, not its high
// watermark: a read-committed reader cannot pass an open transaction, so
// waiting for the high watermark could wait for someone else's commit. If
// another producer's transaction is open when ReadAll starts, events it
// later commits are not included.
func ReadAll(ctx context.Context, cfg Config, topic string) ([]Record, error) {
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{topic}})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Record
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			var recs []Record
			recs, err = b.Decode()
			out = append(out, recs...)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("kafka: read %s: %d partitions unfinished: %w", topic, len(r.pending), err)
			}
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out, nil
}
