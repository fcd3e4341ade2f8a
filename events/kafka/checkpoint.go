package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Checkpoint keeps a reader's position as the committed offsets of a
// consumer group, without joining the group: the broker stores the
// positions, and the reader decides when a position is safe to keep (an
// executor keeps the oldest record it still owes work for, not the last
// it read). Positions of one group must have one writer at a time; an
// executor's group is its node's.
type Checkpoint struct {
	cfg   Config
	group string
	cl    *kgo.Client
	adm   *kadm.Client
}

// OpenCheckpoint returns the checkpoint of group. It contacts no broker.
func OpenCheckpoint(cfg Config, group string) (*Checkpoint, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: checkpoint group missing", ErrInvalidConfig)
	}
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{cfg: cfg.withDefaults(), group: group, cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Load returns the positions kept for topics; a partition never kept is
// absent (a Reader then starts it at the start of its log).
func (c *Checkpoint) Load(ctx context.Context, topics ...string) (Positions, error) {
	got, err := c.adm.FetchOffsetsForTopics(ctx, c.cfg.wire(c.group), c.cfg.wires(topics)...)
	if err == nil {
		err = got.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return Positions{}, nil // nothing was ever kept
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: load checkpoint %s: %w", c.group, c.cfg.explain(translate(err)))
	}
	out := Positions{}
	got.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			out[TopicPartition{c.cfg.local(o.Topic), o.Partition}] = o.At
		}
	})
	return out, nil
}

// Save keeps ps. It is idempotent: saving a position again changes nothing.
func (c *Checkpoint) Save(ctx context.Context, ps Positions) error {
	if len(ps) == 0 {
		return nil
	}
	os := kadm.Offsets{}
	for tp, at := range ps {
		os.Add(kadm.Offset{Topic: c.cfg.wire(tp.Topic), Partition: tp.Partition, At: at, LeaderEpoch: -1})
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.CommitTimeout)
	defer cancel()
	resp, err := c.adm.CommitOffsets(cctx, c.cfg.wire(c.group), os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: save checkpoint %s: %w", c.group, translate(err))
	}
	return nil
}

// Close releases the checkpoint's client.
func (c *Checkpoint) Close() { c.cl.Close() }
