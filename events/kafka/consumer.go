package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Consumer{cfg: cfg, group: group, cl: cl}, nil
}

// Run hands each record to h, in log order per partition, until ctx is done
// (it then returns nil), h returns an error, a record does not decode, or
// fetching fails for good. Fetch and commit failures a retry may cure (a
// broker restarting, a group session lost: see IsRetryable) are retried
// with Config.Retry and logged; an uncommitted record is only delivered
// again, which handlers tolerate because they deduplicate on event id.
// Records h accepted are committed before Run returns; the failing record
// and everything after it are not, so the group's next member starts with
// it. Run closes the consumer when it returns.
func (c *Consumer) Run(ctx context.Context, h Handler) error {
	defer c.Close()
	for {
		// One Do per stretch of failing polls: a clean poll ends it, so the
		// backoff starts afresh at the next outage.
		err := c.cfg.Retry.Do(ctx, IsRetryable, func(int) error { return c.poll(ctx, h) },
			func(next int, err error, wait time.Duration) {
				c.cfg.Logger.Warn("kafka consumer: fetch failed, retrying", "group", c.group, "try", next, "wait", wait, "err", err)
			})
		if ctx.Err() != nil {
			return nil
		}
		if perm := (permanent{}); errors.As(err, &perm) {
			return perm.err
		}
		if err != nil {
			return err
		}
	}
}

// poll handles one poll's records, then reports its fetch errors, so that
// records fetched beside an error are not dropped. A handler's or a
// commit's failure comes back marked permanent: Run does not retry it.
func (c *Consumer) poll(ctx context.Context, h Handler) error {
	fs := c.cl.PollRecords(ctx, c.cfg.MaxPollRecords)
	if ctx.Err() != nil {
		return nil // nothing from this poll was handled, so nothing to commit
	}
	if fs.IsClientClosed() {
		return ErrClosed
	}
	stop, commitErr := c.handle(ctx, fs, h)
	c.cl.AllowRebalance()
	if ctx.Err() != nil && errors.Is(stop, ctx.Err()) {
		stop = nil // shutting down: the record is simply not handled yet
	}
	if err := errors.Join(stop, commitErr); err != nil {
		return permanent{err}
	}
	return fetchErr(fs)
}

// permanent marks an error Run must not retry whatever it wraps: a handler
// that failed has already had its own retries (the Retry middleware).
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

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
		commitErr = c.commit(ctx, done)
	}
	return stop, commitErr
}

// commit commits the accepted records' offsets, retrying while a retry may
// succeed. A commit that still fails only for a while (the broker or the
// group is away) is logged and dropped: the records come again and their
// handlers deduplicate, and the next commit covers these offsets.
func (c *Consumer) commit(ctx context.Context, done []*kgo.Record) error {
	dctx := context.WithoutCancel(ctx)
	b := Backoff{Tries: 5, Initial: c.cfg.Retry.Initial, Max: c.cfg.Retry.Max}
	err := b.Do(ctx, IsRetryable, func(int) error {
		cctx, cancel := context.WithTimeout(dctx, c.cfg.CommitTimeout)
		defer cancel()
		return translate(c.cl.CommitRecords(cctx, done...))
	}, nil)
	switch {
	case err == nil:
		return nil
	case IsRetryable(err) || ctx.Err() != nil:
		c.cfg.Logger.Warn("kafka consumer: commit failed; the records will come again", "group", c.group, "err", err)
		return nil
	}
	return fmt.Errorf("kafka: group %s: commit: %w", c.group, err)
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
// much internally; what reaches us is retried by Run when IsRetryable.
func fetchErr(fs kgo.Fetches) error {
	var errs []error
	fs.EachError(func(topic string, partition int32, err error) {
		errs = append(errs, fmt.Errorf("kafka: fetch %s/%d: %w", topic, partition, translate(err)))
	})
	return errors.Join(errs...)
}
