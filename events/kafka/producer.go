package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/retry"
)

// Message is one event bound for a topic, for appends that span topics.
type Message struct {
	Topic string
	Event events.Envelope
}

// Producer appends events to Kafka in transactions. It is safe for
// concurrent use; appends are serialised, because a Kafka producer has at
// most one open transaction.
type Producer struct {
	cfg  Config
	opts []kgo.Opt

	mu     sync.Mutex // one transaction at a time
	fenced error      // the fence, once met (guarded by mu): see AppendBatch

	clMu sync.Mutex  // guards cl, which an append may replace
	cl   *kgo.Client // the transactional client

	// beforeCommit, when set, runs after the records are written and before
	// the commit; a test seam to observe or fail an open transaction.
	beforeCommit func(context.Context) error
}

// NewProducer returns a transactional, idempotent producer. It does not
// contact the brokers until the first append.
func NewProducer(cfg Config) (*Producer, error) {
	if err := cfg.validate(true); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	opts := append(cfg.clientOpts(),
		kgo.TransactionalID(cfg.wire(cfg.TransactionalID)),
		kgo.TransactionTimeout(cfg.TransactionTimeout),
		// Kafka's own key partitioner, named so that PartitionOf computes
		// the partition an event lands in with the same code.
		kgo.RecordPartitioner(partitioner),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Producer{cfg: cfg, opts: opts, cl: cl}, nil
}

// client is the current transactional client.
func (p *Producer) client() *kgo.Client {
	p.clMu.Lock()
	defer p.clMu.Unlock()
	return p.cl
}

// replaceClient drops the client, whose transaction never committed and
// whose records may still be in flight to a broker that does not answer,
// for a new one with the same transactional ID. franz-go waits for the
// outcome of a record sent to a broker that died rather than fail it
// (failing it could break idempotence), so an append would otherwise wait
// for the broker's return, past its caller's deadline. The new client's
// first append fences the old transaction: the broker aborts it, so none
// of its records is ever read. The caller holds mu.
func (p *Producer) replaceClient() {
	cl, err := kgo.NewClient(p.opts...)
	if err != nil {
		p.cfg.Logger.Error("kafka producer: a new client", "err", err)
		return // the options made a client before: not expected
	}
	p.clMu.Lock()
	old := p.cl
	p.cl = cl
	p.clMu.Unlock()
	go old.Close()
}

// produce writes recs in the open transaction, returning when they are
// written or ctx is done, whichever is first.
func (p *Producer) produce(ctx context.Context, recs []*kgo.Record) error {
	done := make(chan error, 1)
	cl := p.client()
	go func() { done <- cl.ProduceSync(ctx, recs...).FirstErr() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		p.replaceClient()
		return fmt.Errorf("%w: produce: %w (the transaction is abandoned and never commits)", ErrAborted, ctx.Err())
	}
}

// Append writes evs to topic in one transaction: read-committed readers see
// all of them or none. Every event is encoded (and so validated) before the
// transaction begins, so a bad event costs nothing in the log.
func (p *Producer) Append(ctx context.Context, topic string, evs ...events.Envelope) error {
	msgs := make([]Message, len(evs))
	for i, e := range evs {
		msgs[i] = Message{Topic: topic, Event: e}
	}
	return p.AppendBatch(ctx, msgs...)
}

// AppendBatch is Append for events bound for several topics, such as a plan
// and the release of its first jobs, which must become visible together.
func (p *Producer) AppendBatch(ctx context.Context, msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	recs := make([]*kgo.Record, len(msgs))
	var errs []error
	for i, m := range msgs {
		if m.Topic == "" {
			errs = append(errs, fmt.Errorf("event %d (%s): topic missing", i, m.Event.Type))
			continue
		}
		b, err := p.cfg.encode(m.Event)
		if err != nil {
			errs = append(errs, fmt.Errorf("event %d (%s): %w", i, m.Event.Type, err))
			continue
		}
		recs[i] = &kgo.Record{
			Topic:     p.cfg.wire(m.Topic),
			Key:       []byte(m.Event.Key),
			Value:     b,
			Timestamp: m.Event.Time,
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fenced != nil {
		return fmt.Errorf("kafka: fenced earlier: %w", p.fenced)
	}
	err := p.transact(ctx, recs)
	if p.cfg.SoleOwner && errors.Is(err, ErrFenced) && !errors.Is(err, ErrDenied) && ctx.Err() == nil {
		p.cfg.Logger.Warn("kafka producer: fenced by one of its own abandoned clients; starting a new one",
			"transactional_id", p.cfg.TransactionalID, "err", err)
		p.replaceClient()
		err = p.transact(ctx, recs)
	}
	if errors.Is(err, ErrFenced) {
		// A fenced producer stays fenced: its client may be left inside
		// the transaction the failed abort could not end, and would answer
		// later appends with errors that hide the fence.
		p.fenced = err
	}
	return err
}

// transact writes recs in one transaction and commits it. The caller
// holds mu.
func (p *Producer) transact(ctx context.Context, recs []*kgo.Record) error {
	// BeginTransaction loads a producer id the broker has not given yet
	// with no context, so a broker that does not answer would hold the
	// append past its caller's end (a stopping executor's heartbeat). The
	// id is loaded here first, within ctx; any other failure to load it is
	// left to BeginTransaction and ProduceSync, as before.
	if _, _, err := p.client().ProducerID(ctx); err != nil && ctx.Err() != nil {
		return fmt.Errorf("kafka: awaiting the producer id: %w", ctx.Err())
	}
	if err := p.client().BeginTransaction(); err != nil {
		err = translate(err)
		p.afresh(err)
		return fmt.Errorf("kafka: begin transaction: %w", err)
	}
	if err := p.produce(ctx, recs); errors.Is(err, ErrAborted) {
		return err
	} else if err != nil {
		return p.abort(ctx, fmt.Errorf("produce: %w", translate(err)))
	}
	if p.beforeCommit != nil {
		if err := p.beforeCommit(ctx); err != nil {
			return p.abort(ctx, err)
		}
	}
	if err := p.commit(ctx); err != nil {
		return err
	}
	if p.cfg.AwaitVisible {
		p.awaitVisible(ctx, recs)
	}
	return nil
}

// awaitVisible waits until read-committed readers can see recs, which
// were just committed (Config.AwaitVisible). Apache Kafka answers a
// commit once its coordinator has logged the decision, and writes the
// markers that end the transaction in each partition after; until a
// partition's marker is written its last stable offset stays before recs.
// The commit has happened whatever this finds: a wait that runs out is
// logged, never an error.
func (p *Producer) awaitVisible(ctx context.Context, recs []*kgo.Record) {
	want := Positions{}
	var topics []string
	for _, r := range recs {
		tp := TopicPartition{r.Topic, r.Partition}
		if _, ok := want[tp]; !ok && !slices.Contains(topics, r.Topic) {
			topics = append(topics, r.Topic)
		}
		want[tp] = max(want[tp], r.Offset+1)
	}
	// Another producer's transaction open on the same partition holds its
	// last stable offset back as well, for as long as it stays open: the
	// wait is bounded well below a commit's, and gives up quietly.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(time.Second, p.cfg.CommitTimeout))
	defer cancel()
	adm := kadm.NewClient(p.client())
	quick := retry.Backoff{Initial: 2 * time.Millisecond, Max: 100 * time.Millisecond}
	err := quick.Do(wctx, nil, func(int) error {
		lso, err := adm.ListCommittedOffsets(wctx, topics...)
		if err != nil {
			return err
		}
		for tp, end := range want {
			if o, ok := lso.Lookup(tp.Topic, tp.Partition); !ok || o.Err != nil || o.Offset < end {
				return fmt.Errorf("%s is not visible yet", tp)
			}
		}
		return nil
	}, nil)
	if err != nil {
		p.cfg.Logger.Debug("kafka: committed events are not yet visible to readers", "err", err)
	}
}

// commit ends the transaction on a detached context: cancelling an EndTxn
// in flight would make its outcome unknowable (see kgo.EndTransaction).
func (p *Producer) commit(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CommitTimeout)
	defer cancel()
	err := p.client().EndTransaction(cctx, kgo.TryCommit)
	if err == nil {
		return nil
	}
	if cctx.Err() != nil {
		// No answer in time: the commit may have landed or not, and the
		// client's transaction state is unknown; start afresh.
		p.replaceClient()
		return fmt.Errorf("%w: commit: %w", ErrUncertain, err)
	}
	// franz-go's rule: after a failed commit, end again with TryAbort. When
	// the commit was never attempted or the broker said it must abort, the
	// abort is certain; otherwise the commit may have landed first.
	abortErr := p.client().EndTransaction(cctx, kgo.TryAbort)
	certain := errors.Is(err, kerr.OperationNotAttempted) || errors.Is(err, kerr.TransactionAbortable)
	switch {
	case errors.Is(translate(err), ErrFenced):
		return fmt.Errorf("kafka: commit: %w", translate(err))
	case certain && abortErr == nil:
		return fmt.Errorf("%w: commit refused: %w", ErrAborted, err)
	default:
		// The client's transactional state is unknown too (franz-go may
		// refuse every later transaction): start afresh, as above.
		p.afresh(translate(err))
		return fmt.Errorf("%w: commit: %w", ErrUncertain, errors.Join(err, abortErr))
	}
}

// afresh replaces the client after err left its transactional state
// unusable: franz-go then refuses every later transaction of the client
// ("producer ID has a fatal, unrecoverable error"), as after a commit a
// transaction coordinator cut off from its peers answered with
// INVALID_TXN_STATE, and the producer would fail every append until its
// process restarts. A new client with the same transactional ID starts
// afresh and fences what the old one left open. Not when err says another
// producer took the ID over (it must keep it) or the producer was closed.
// The caller holds mu.
func (p *Producer) afresh(err error) {
	if errors.Is(err, ErrFenced) || errors.Is(err, ErrClosed) {
		return
	}
	p.replaceClient()
}

// abort rolls the open transaction back. Even if the abort request fails the
// events stay invisible: the broker aborts the transaction itself when
// TransactionTimeout passes, and the next BeginTransaction fences it.
func (p *Producer) abort(ctx context.Context, cause error) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CommitTimeout)
	defer cancel()
	err := p.client().AbortBufferedRecords(actx)
	if err == nil {
		err = p.client().EndTransaction(actx, kgo.TryAbort)
	}
	if actx.Err() != nil {
		p.replaceClient()
	}
	if err != nil {
		return fmt.Errorf("%w: %w (the abort request failed too: %v)", ErrAborted, cause, translate(err))
	}
	if errors.Is(cause, ErrFenced) {
		return cause
	}
	return fmt.Errorf("%w: %w", ErrAborted, cause)
}

// Fence takes the producer's transactional id over now, instead of at the
// first append: any transaction an older producer with the same id left
// open is aborted, and that producer's appends fail with ErrFenced from
// here on. A service that must read the whole story before deciding (the
// planner) fences first and reads after, so no decision of the old one can
// land behind its back.
func (p *Producer) Fence(ctx context.Context) error {
	if _, _, err := p.client().ProducerID(ctx); err != nil {
		return fmt.Errorf("kafka: take over transactional id %q: %w", p.cfg.TransactionalID, translate(err))
	}
	return nil
}

// Close flushes nothing (appends are synchronous) and releases the client.
// An append running concurrently fails with ErrClosed.
func (p *Producer) Close() { p.client().Close() }

// Ping checks that a broker answers, for health checks.
func (p *Producer) Ping(ctx context.Context) error { return translate(p.client().Ping(ctx)) }

// Fits checks that e fits in one record of the log: an error wrapping
// ErrRecordTooLarge (or the encoding's) is what AppendBatch would refuse
// it with. Writers that can still choose (cut a plan in parts, fail one
// request) check before they decide.
func (c Config) Fits(e events.Envelope) error {
	_, err := c.withDefaults().encode(e)
	return err
}

// encode encodes e for a record, refusing one larger than MaxRecordBytes.
func (c Config) encode(e events.Envelope) ([]byte, error) {
	b, err := events.Encode(e)
	if err != nil {
		return nil, err
	}
	// A record carries about 100 bytes of framing beyond key and value.
	if n := len(b) + len(e.Key) + 128; n > c.MaxRecordBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes with its framing; the log takes at most %d (MaxRecordBytes)",
			ErrRecordTooLarge, e.Type, n, c.MaxRecordBytes)
	}
	return b, nil
}
