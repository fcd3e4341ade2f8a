package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events"
)

// Record is one decoded event with its place in the log.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Event     events.Envelope
}

func (r Record) String() string {
	return fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset)
}

// Handler applies one event. Returning nil says its effect is durable, and
// the offset may be committed; returning an error stops the consumer.
type Handler func(ctx context.Context, rec Record) error

// Consumer reads topics as a member of a consumer group, committed data
// only, and commits offsets only for records its handler accepted.
type Consumer struct {
	cfg   Config
	group string
	cl    *kgo.Client

	closeOnce sync.Once
}

// NewConsumer joins group (use the events.Group* constants) for topics. A
// group with no committed offsets starts from the beginning of the log,
// because a new consumer of an event log must see its whole history.
func NewConsumer(cfg Config, group string, topics ...string) (*Consumer, error) {
	err := cfg.validate(false)
	var ps []error
	if err != nil {
		ps = append(ps, err)
	}
	if group == "" {
		ps = append(ps, fmt.Errorf("%w: group missing", ErrInvalidConfig))
	}
	if len(topics) == 0 {
		ps = append(ps, fmt.Errorf("%w: no topics to consume", ErrInvalidConfig))
	}
	if err := errors.Join(ps...); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	opts := append(cfg.clientOpts(),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(cfg.SessionTimeout),
		// Rebalances wait until a polled batch is handled and committed, so
		// we never commit for a partition that has moved to another member.
		kgo.BlockRebalanceOnPoll(),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Consumer{cfg: cfg, group: group, cl: cl}, nil
}

// Run hands each record to h, in log order per partition, until ctx is done
// (it then returns nil), h returns an error, a record does not decode, or
// fetching fails. Records h accepted are committed before Run returns; the
// failing record and everything after it are not, so the group's next
// member starts with it. Run closes the consumer when it returns.
func (c *Consumer) Run(ctx context.Context, h Handler) error {
	defer c.Close()
	for {
		fs := c.cl.PollRecords(ctx, c.cfg.MaxPollRecords)
		if ctx.Err() != nil {
			return nil // nothing from this poll was handled, so nothing to commit
		}
		if fs.IsClientClosed() {
			return ErrClosed
		}
		if err := fetchErr(fs); err != nil {
			return err
		}
		stop, commitErr := c.handle(ctx, fs, h)
		c.cl.AllowRebalance()
		if ctx.Err() != nil && errors.Is(stop, ctx.Err()) {
			stop = nil // shutting down: the record is simply not handled yet
		}
		if err := errors.Join(stop, commitErr); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// handle runs h over one poll's records and commits those it accepted. It
// returns why it stopped early, if it did, and the commit's error.
func (c *Consumer) handle(ctx context.Context, fs kgo.Fetches, h Handler) (stop, commitErr error) {
	var done []*kgo.Record
	for _, r := range fs.Records() {
		if err := ctx.Err(); err != nil {
			stop = err
			break
		}
		rec, err := decode(r)
		if err != nil {
			stop = err
			break
		}
		if err := h(ctx, rec); err != nil {
			stop = fmt.Errorf("kafka: group %s: handler failed on %s (%s %s): %w",
				c.group, rec, rec.Event.Type, rec.Event.ID, err)
			break
		}
		done = append(done, r)
	}
	if len(done) > 0 {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.CommitTimeout)
		defer cancel()
		if err := c.cl.CommitRecords(cctx, done...); err != nil {
			commitErr = fmt.Errorf("kafka: group %s: commit: %w", c.group, translate(err))
		}
	}
	return stop, commitErr
}

// Close leaves the group and releases the client. Offsets of records not yet
// accepted stay uncommitted.
func (c *Consumer) Close() {
	c.closeOnce.Do(c.cl.CloseAllowingRebalance)
}

// decode turns a kgo record into a Record, strictly.
func decode(r *kgo.Record) (Record, error) {
	e, err := events.Decode(r.Value)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %s/%d@%d: %w", ErrUndecodable, r.Topic, r.Partition, r.Offset, err)
	}
	return Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Event: e}, nil
}

// fetchErr returns the fetch errors of a poll, translated. franz-go retries
// what it can internally; what reaches us needs an operator.
func fetchErr(fs kgo.Fetches) error {
	var errs []error
	fs.EachError(func(topic string, partition int32, err error) {
		errs = append(errs, fmt.Errorf("kafka: fetch %s/%d: %w", topic, partition, translate(err)))
	})
	return errors.Join(errs...)
}
