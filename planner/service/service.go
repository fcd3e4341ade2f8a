package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/events/retry"
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
	// Leases: the heartbeats (compacted: each node's last beat is enough,
	// a start gives every lease a fresh term anyway).
	events.TopicHeartbeats,
}

// Service is the planner service. Create it with New and start it with Run.
type Service struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	readyOnce sync.Once
	ready     chan struct{}
	mu        sync.Mutex
	restart   Restart     // of the last run that became ready
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

// Restart says how the latest run rebuilt its state (from a snapshot or
// the whole log, how many events, how long to ready); zero until Ready.
func (s *Service) Restart() Restart {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restart
}

// Leading reports whether this instance, run with Config.Standby, leads
// the election now (a term of it is running).
func (s *Service) Leading() bool { return s.leading.Load() }

// Ready is closed once Run has rebuilt the state from the log and taken
// the decisions it found pending.
func (s *Service) Ready() <-chan struct{} { return s.ready }

// Run rebuilds the state from the log (from offset zero, or from its
// latest snapshot and the log after it), takes whatever decisions the log
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

// run runs the service until ctx is done or something fails. When the log
// refuses a request's decision for good (kafka.IsRefused), the decision is
// already folded into the state but will never be in the log: the state is
// thrown away, rebuilt from the log, and the request closed with the
// refusal as its reason (jobs.Fail), so it blocks neither the others nor
// the next start.
func (s *Service) run(ctx context.Context) error {
	refused := map[string]string{}
	for {
		err := s.runOnce(ctx, refused)
		var rf *refusal
		if !errors.As(err, &rf) {
			return err
		}
		if _, again := refused[rf.request]; again {
			return err // even closing it was refused: an operator must look
		}
		s.log.Warn("the log refused a request's decision; rebuilding the state to close the request",
			"request", rf.request, "err", rf.err)
		refused[rf.request] = "its decision cannot be appended: " + rf.err.Error()
	}
}

// refusal is a request whose decision the log refused for good.
type refusal struct {
	request string
	err     error
}

func (r *refusal) Error() string {
	return fmt.Sprintf("planner service: the log refused request %s's decision: %v", r.request, r.err)
}

func (s *Service) runOnce(ctx context.Context, refused map[string]string) error {
	kc := s.cfg.Kafka
	began := time.Now()
	if err := kafka.EnsureTopics(ctx, kc, s.cfg.Partitions, events.Topics()...); err != nil {
		return err
	}
	prod, err := kafka.NewProducer(kc)
	if err != nil {
		return err
	}
	defer prod.Close()
	// Fence first, read after: an older instance still alive can commit
	// nothing once we hold the transactional id, so the state we read is
	// the whole story and no decision of ours can duplicate one of its.
	if err := prod.Fence(ctx); err != nil {
		return err
	}
	start := time.Now()
	l := &loop{svc: s, prod: prod, refused: refused, prepare: start.Sub(began)}
	rd, err := l.replay(ctx)
	if err != nil {
		return err
	}
	defer rd.Close()
	defer l.waitWrites()
	l.heartbeatParts = partitionsOf(rd, events.TopicHeartbeats) // the topic's own count, which may not be Config's
	if err := l.caughtUp(ctx, start); err != nil {
		return err
	}
	// passed is the position of the last pass: the state is its until
	// the next batch is folded.
	passed := rd.Position()
	for {
		// A read ends at the tick even with nothing to read, so that
		// migration timers fire (planner/migration/timers.go).
		if _, err := l.next(ctx, rd); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				// Stopping: next folded nothing (it checks ctx first).
				l.lastSnapshot(ctx, passed)
			}
			return err
		}
		l.st.reqs.DropStubs()
		if err := l.decideAll(ctx); err != nil {
			return err
		}
		l.lag(rd)
		s.m.countJobs(l.st.reqs)
		passed = rd.Position()
		l.maybeSnapshot(ctx, passed)
	}
}

// replay rebuilds the state: from the snapshot, if one is usable, and the
// log after it; from the whole log otherwise. It returns the Reader, at
// the end the log had when it opened.
func (l *loop) replay(ctx context.Context) (*kafka.Reader, error) {
	rd, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	for !caughtUpAtOpen(rd) {
		b, err := l.next(ctx, rd)
		if err != nil {
			rd.Close()
			return nil, err
		}
		if b.CaughtUp {
			break
		}
	}
	l.st.reqs.DropStubs()
	return rd, nil
}

// next reads and folds one batch.
func (l *loop) next(ctx context.Context, rd *kafka.Reader) (kafka.Batch, error) {
	b, err := rd.Next(ctx)
	if err := ctx.Err(); err != nil {
		return b, err
	}
	if err != nil {
		return b, fmt.Errorf("planner service: read: %w", err)
	}
	return b, l.fold(b)
}

// caughtUpAtOpen reports whether rd has nothing to replay: every partition
// is read up to the end it had when rd opened.
func caughtUpAtOpen(rd *kafka.Reader) bool {
	pos := rd.Position()
	for tp, end := range rd.Ends() {
		if pos[tp] < end {
			return false
		}
	}
	return true
}

// loop is one Run's state and position in the log.
type loop struct {
	svc  *Service
	st   *state
	prod *kafka.Producer
	// folded counts the events folded since the last snapshot; events
	// those folded before it, snapshots included (snapshot.go).
	folded  int
	events  int64
	restart Restart
	// writing is closed when the snapshot being written is; topicIDs
	// are the log's, for the snapshots; snapAt is when the last was
	// taken (or the state restored from one).
	writing  chan struct{}
	topicIDs map[string]string
	snapAt   time.Time
	// prepare is how long the topics' check and the fencing took before
	// the first read, for the ready line.
	prepare time.Duration
	// refused are requests whose decision the log refused, with why:
	// closed by the first pass of the rebuilt state (see run).
	refused map[string]string
	// heartbeatParts is drove.heartbeats' partition count, for the keys
	// of lease checks (nodes.go).
	heartbeatParts int
}

// fold applies a batch's events to the state.
func (l *loop) fold(b kafka.Batch) error {
	for _, raw := range b.Records {
		rec, err := raw.Decode()
		if err != nil {
			// A consumer that does not understand an event stops rather
			// than decide on a state that quietly misses it.
			return err
		}
		env := rec.Event
		payload, _ := env.DecodePayload() // Decode checked it
		l.st.apply(env, payload, inventory.Pos{Time: env.Time, Partition: rec.Partition, Offset: rec.Offset})
	}
	l.folded += len(b.Records)
	return nil
}

// lag sets the lag gauge, per topic the events not read yet, and the
// position gauge, per topic the offsets read.
func (l *loop) lag(rd *kafka.Reader) {
	pos, by, at := rd.Position(), map[string]int64{}, map[string]int64{}
	for tp, end := range rd.Ends() {
		by[tp.Topic] += max(end-pos[tp], 0)
		at[tp.Topic] += pos[tp]
	}
	for topic, n := range by {
		l.svc.m.lag.WithLabelValues(topic).Set(float64(n))
		l.svc.m.position.WithLabelValues(topic).Set(float64(at[topic]))
	}
}

// caughtUp ends the replay: the state is the log's, and every request's
// pending decisions are taken now.
func (l *loop) caughtUp(ctx context.Context, start time.Time) error {
	requests, active := l.st.reqs.Counts()
	l.restart.Events, l.restart.Took = l.folded, time.Since(start)
	l.svc.log.Info("state rebuilt from the log", "requests", requests, "active", active,
		"nodes", len(l.st.inv.Nodes), "instances", len(l.st.inv.Instances), "prepare", l.prepare,
		"snapshot", l.restart.Snapshot, "restore", l.restart.Restore, "events", l.restart.Events, "took", l.restart.Took)
	l.svc.mu.Lock()
	l.svc.restart = l.restart
	l.svc.mu.Unlock()
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
	if err := l.decideNodes(ctx); err != nil {
		return err
	}
	env := l.jobsEnv()
	for id, why := range l.refused {
		if err := l.decided(ctx, id, jobs.Fail(env, l.st.reqs, id, why)); err != nil {
			return err
		}
		delete(l.refused, id)
	}
	// A closed request leaves the fold at once: iterate over a copy.
	for _, id := range slices.Clone(l.st.reqs.Order()) {
		if !l.st.reqs.Active(id) {
			continue
		}
		if err := l.decided(ctx, id, jobs.Decide(env, l.st.reqs, id)); err != nil {
			return err
		}
	}
	return l.decideMigrations(ctx)
}

// jobsEnv is what the requests' passes read and where their decisions go.
func (l *loop) jobsEnv() jobs.Env {
	cfg := l.svc.cfg
	return jobs.Env{Inv: l.st.inv, Apply: l.st.applyDecision, Options: cfg.Options,
		MaxRunningMoves: cfg.MaxRunningMoves, AutoMovesPerNode: cfg.AutoMovesPerNode, IndexOrder: cfg.ReleaseInPlanOrder,
		Producer:  cfg.Producer,
		PlanTook:  func(d time.Duration) { l.svc.m.planSeconds.Observe(d.Seconds()) },
		Migrating: l.st.migs.ActiveOn, Migrations: l.st.migs.InFlight, Fits: cfg.Kafka.Fits, PlanPartBytes: cfg.PlanPartBytes}
}

// decided appends one request's decisions. A refusal of the log for what
// the events are ends this run with a *refusal (see run).
func (l *loop) decided(ctx context.Context, id string, d jobs.Decision) error {
	if len(d.Events) == 0 {
		return nil
	}
	if err := l.append(ctx, messages(d.Events)); err != nil {
		if kafka.IsRefused(err) && !errors.Is(err, kafka.ErrFenced) {
			return &refusal{request: id, err: err}
		}
		return err
	}
	if d.Outcome != "" {
		l.svc.m.requests.WithLabelValues(d.Outcome).Inc()
	}
	l.svc.log.Info("decided", "request", id, "events", len(d.Events), "first", d.Events[0].Type,
		"last", d.Events[len(d.Events)-1].Type)
	return nil
}

// decideMigrations runs planner/migration's pass over every migration.
func (l *loop) decideMigrations(ctx context.Context) error {
	ms := l.st.migs
	env := migration.Env{Inv: l.st.inv, Busy: l.st.reqs.BusyInstances, Apply: l.st.applyDecision,
		Options: l.svc.cfg.Options, StallRetries: l.svc.cfg.StallRetries, Producer: l.svc.cfg.Producer,
		Log: l.svc.log, Reserve: l.st.reserveInFlight}
	for _, id := range slices.Clone(ms.Sorted()) {
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
	b := retry.Backoff{Tries: l.svc.cfg.AppendRetries + 1, Initial: l.svc.cfg.RetryBackoff}
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
