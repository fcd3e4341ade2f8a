package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner/inventory"
	"github.com/drovehq/drove/planner/jobs"
	"github.com/drovehq/drove/planner/migration"
)

// topics are what the service folds: everything it decides from.
var topics = []string{
	events.TopicInventory, events.TopicRequests, events.TopicPlans, events.TopicJobs, events.TopicOpcodes,
	// Per-instance migrations: their commands and records, the settings,
	// and progress (for the progress timeout).
	events.TopicMigrations, events.TopicSettings, events.TopicProgress,
}

// Service is the planner service. Create it with New and start it with Run.
type Service struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	readyOnce sync.Once
	ready     chan struct{}
	leading   atomic.Bool // with Standby: a term runs (election.go)
}

// New validates cfg and returns a service; it contacts no broker.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("%w: Metrics: %w", ErrInvalidConfig, err)
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("service", "planner"), m: m, ready: make(chan struct{})}, nil
}

// Leading reports whether this instance, run with Config.Standby, leads
// the election now (a term of it is running).
func (s *Service) Leading() bool { return s.leading.Load() }

// Ready is closed once Run has rebuilt the state from the log and taken
// the decisions it found pending.
func (s *Service) Ready() <-chan struct{} { return s.ready }

// Run rebuilds the state from offset zero, takes whatever decisions the log
// shows pending, then follows the log and decides as events arrive, until
// ctx is done (it then returns nil) or something fails: a fetch, an event
// that does not decode, an append that cannot be made, or fencing by a
// newer instance (the error wraps kafka.ErrFenced). Each Run starts from
// scratch, so calling it again after an error is a clean restart.
//
// With Config.Standby, Run first joins the election and decides only
// while it leads (see lead).
func (s *Service) Run(ctx context.Context) error {
	run := s.run
	if s.cfg.Standby {
		run = s.lead
	}
	err := run(ctx)
	if ctx.Err() != nil {
		// Shutting down: whatever was decided and not appended is not in
		// the log, and the next start decides it again.
		return nil
	}
	return err
}

func (s *Service) run(ctx context.Context) error {
	kc := s.cfg.Kafka
	if err := kafka.EnsureTopics(ctx, kc, s.cfg.Partitions, events.Topics()...); err != nil {
		return err
	}
	// Fence first, read after: an older instance still alive can commit
	// nothing once we hold the transactional id, so the state we read is
	// the whole story and no decision of ours can duplicate one of its.
	if err := fence(ctx, kc); err != nil {
		return err
	}
	prod, err := kafka.NewProducer(kc)
	if err != nil {
		return err
	}
	defer prod.Close()

	pending, err := endOffsets(ctx, kc)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(clientOpts(kc),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Commit markers take offsets; the last offset before an end is
		// often one, and seeing it is how replay knows it is done.
		kgo.KeepControlRecords(),
	)...)
	if err != nil {
		return fmt.Errorf("%w: Kafka: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()

	l := &loop{svc: s, st: newState(s.cfg.Clock), prod: prod, pending: pending, next: map[tp]int64{}}
	start := time.Now()
	if len(pending) == 0 {
		if err := l.caughtUp(ctx, start); err != nil {
			return err
		}
	}
	for {
		// A poll ends at the tick even with nothing to read, so that
		// migration timers fire (planner/migration/timers.go).
		pctx, pcancel := context.WithTimeout(ctx, s.cfg.Tick)
		fs := cl.PollFetches(pctx)
		pcancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if fs.IsClientClosed() {
			return kafka.ErrClosed
		}
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) {
				return // the tick
			}
			errs = append(errs, fmt.Errorf("planner service: fetch %s/%d: %w", t, p, err))
		})
		if err := errors.Join(errs...); err != nil {
			return err
		}
		wasReplaying := len(l.pending) > 0
		if err := l.fold(fs); err != nil {
			return err
		}
		switch {
		case wasReplaying && len(l.pending) == 0:
			err = l.caughtUp(ctx, start)
		case !wasReplaying:
			err = l.decideAll(ctx)
		}
		if err != nil {
			return err
		}
		s.m.countJobs(l.st.reqs)
	}
}

type tp struct {
	topic     string
	partition int32
}

// loop is one Run's state and position in the log.
type loop struct {
	svc     *Service
	st      *state
	prod    *kafka.Producer
	pending map[tp]int64 // replay: partitions not yet read up to their end
	next    map[tp]int64 // next offset to read, for the lag gauge
}

// fold applies a poll's events to the state and updates the lag gauge.
func (l *loop) fold(fs kgo.Fetches) error {
	var err error
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		k := tp{p.Topic, p.Partition}
		for _, rec := range p.Records {
			if err != nil {
				return
			}
			l.next[k] = rec.Offset + 1
			if end, ok := l.pending[k]; ok && rec.Offset >= end-1 {
				delete(l.pending, k)
			}
			if rec.Attrs.IsControl() {
				continue
			}
			env, derr := events.Decode(rec.Value)
			if derr != nil {
				// A consumer that does not understand an event stops
				// rather than decide on a state that quietly misses it.
				err = fmt.Errorf("%w: %s/%d@%d: %w", kafka.ErrUndecodable, rec.Topic, rec.Partition, rec.Offset, derr)
				return
			}
			payload, _ := env.DecodePayload() // Decode checked it
			l.st.apply(env, payload, inventory.Pos{Time: env.Time, Partition: rec.Partition, Offset: rec.Offset})
		}
		if p.LastStableOffset >= 0 {
			if n, ok := l.next[k]; ok {
				l.svc.m.lag.WithLabelValues(p.Topic).Set(float64(max(p.LastStableOffset-n, 0)))
			}
		}
	})
	return err
}

// caughtUp ends the replay: the state is the log's, and every request's
// pending decisions are taken now.
func (l *loop) caughtUp(ctx context.Context, start time.Time) error {
	requests, active := l.st.reqs.Counts()
	l.svc.log.Info("state rebuilt from the log", "requests", requests, "active", active,
		"nodes", len(l.st.inv.Nodes), "instances", len(l.st.inv.Instances), "took", time.Since(start))
	err := l.decideAll(ctx)
	l.svc.m.countJobs(l.st.reqs)
	l.svc.readyOnce.Do(func() { close(l.svc.ready) })
	return err
}

// decideAll runs a pass over every active request, oldest first, so that
// a slot freed by one request's job goes to the oldest waiting request;
// then one over every migration, oldest first, so a freed slot goes to the
// oldest queued migration. Each request's or migration's decisions are
// one transaction.
func (l *loop) decideAll(ctx context.Context) error {
	env := jobs.Env{Inv: l.st.inv, Apply: l.st.applyDecision, Options: l.svc.cfg.Options,
		MaxRunningMoves: l.svc.cfg.MaxRunningMoves, AutoMovesPerNode: l.svc.cfg.AutoMovesPerNode, Producer: l.svc.cfg.Producer,
		PlanTook:  func(d time.Duration) { l.svc.m.planSeconds.Observe(d.Seconds()) },
		Migrating: l.st.migs.ActiveOn}
	for _, id := range l.st.reqs.Order() {
		if !l.st.reqs.Active(id) {
			continue
		}
		d := jobs.Decide(env, l.st.reqs, id)
		if len(d.Events) == 0 {
			continue
		}
		if err := l.append(ctx, messages(d.Events)); err != nil {
			return err
		}
		if d.Outcome != "" {
			l.svc.m.requests.WithLabelValues(d.Outcome).Inc()
		}
		l.svc.log.Info("decided", "request", id, "events", len(d.Events), "first", d.Events[0].Type,
			"last", d.Events[len(d.Events)-1].Type)
	}
	return l.decideMigrations(ctx)
}

// decideMigrations runs planner/migration's pass over every migration.
func (l *loop) decideMigrations(ctx context.Context) error {
	ms := l.st.migs
	env := migration.Env{Inv: l.st.inv, Busy: l.st.reqs.BusyInstances, Apply: l.st.applyDecision,
		Options: l.svc.cfg.Options, StallRetries: l.svc.cfg.StallRetries, Producer: l.svc.cfg.Producer,
		Log: l.svc.log}
	for _, id := range ms.Sorted() {
		env.Now = l.svc.cfg.Clock()
		evs := migration.Decide(env, ms, id)
		if len(evs) == 0 {
			continue
		}
		if err := l.append(ctx, messages(evs)); err != nil {
			return err
		}
		rec := ms.Record(id)
		l.svc.log.Info("migration decided", "migration", id, "events", len(evs),
			"state", rec.State, "phase", rec.Phase, "message", rec.Message)
	}
	return nil
}

// messages puts decisions on their topics.
func messages(envs []events.Envelope) []kafka.Message {
	out := make([]kafka.Message, len(envs))
	for i, e := range envs {
		topic, _ := events.TopicOf(e.Type) // the decisions are events' own types: always known
		out[i] = kafka.Message{Topic: topic, Event: e}
	}
	return out
}

// append writes one pass's events in one transaction, retrying the same
// events (same ids) while a retry may succeed. An outcome Kafka could not
// confirm is retried too: if the first attempt did land, the second only
// restates facts the fold already holds.
func (l *loop) append(ctx context.Context, msgs []kafka.Message) error {
	b := kafka.Backoff{Tries: l.svc.cfg.AppendRetries + 1, Initial: l.svc.cfg.RetryBackoff}
	err := b.Do(ctx, func(err error) bool {
		return !errors.Is(err, kafka.ErrFenced) && (kafka.IsRetryable(err) || errors.Is(err, kafka.ErrUncertain))
	}, func(int) error { return l.prod.AppendBatch(ctx, msgs...) },
		func(next int, err error, _ time.Duration) {
			l.svc.log.Warn("append failed, retrying", "attempt", next-1, "err", err)
		})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ErrAppend, errors.Join(err, ctx.Err()))
	}
	return fmt.Errorf("%w: %w", ErrAppend, err)
}

// clientOpts are the kgo options the kafka.Config implies (its own are
// unexported).
func clientOpts(kc kafka.Config) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(kc.Brokers...), kgo.ClientID("drove-planner")}
	if kc.ClientID != "" {
		opts = append(opts, kgo.ClientID(kc.ClientID))
	}
	if kc.DialTimeout > 0 {
		opts = append(opts, kgo.DialTimeout(kc.DialTimeout))
	}
	wait := time.Second
	if kc.FetchMaxWait > 0 {
		wait = kc.FetchMaxWait
	}
	return append(append(opts, kgo.FetchMaxWait(wait)), kc.DialOpts()...)
}

// fence takes the transactional id over, aborting any transaction an older
// instance left open and fencing that instance's future appends.
func fence(ctx context.Context, kc kafka.Config) error {
	opts := append(clientOpts(kc), kgo.TransactionalID(kc.TransactionalID))
	if kc.TransactionTimeout > 0 {
		opts = append(opts, kgo.TransactionTimeout(kc.TransactionTimeout))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("%w: Kafka: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("planner service: take over transactional id %q: %w", kc.TransactionalID, err)
	}
	return nil
}

// endOffsets lists, for each partition holding events, the last stable
// offset: where replay ends. A read-committed reader cannot pass an open
// transaction, and after fencing none of ours is open.
func endOffsets(ctx context.Context, kc kafka.Config) (map[tp]int64, error) {
	cl, err := kgo.NewClient(clientOpts(kc)...)
	if err != nil {
		return nil, fmt.Errorf("%w: Kafka: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("planner service: start offsets: %w", err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("planner service: end offsets: %w", err)
	}
	out := map[tp]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && o.Offset > s.Offset {
			out[tp{o.Topic, o.Partition}] = o.Offset
		}
	})
	return out, nil
}
