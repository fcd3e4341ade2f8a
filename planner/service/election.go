package service

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/drovehq/drove/events"
)

// electionTopic is the topic whose partition 0 the election hands out. Any
// topic every log has would do; the members never read it.
const electionTopic = events.TopicInventory

// lead takes part in the election and runs the service (run) for as long
// as this instance leads, until ctx ends or a term fails.
//
// The election is Kafka's group membership: every instance joins the group
// events.GroupPlannerElection "consuming" drove.inventory (fetching paused),
// and whoever is assigned partition 0 leads. The balancer is cooperative
// and sticky: a standby joining leaves partition 0 where it is, and a
// partition that moves is revoked from its owner in one rebalance and
// given to the new owner only in the next, so a live leader stops its
// term (and waits for it to end) before anyone else is given partition 0. A leader that dies or is cut off stops heartbeating;
// after ElectionTimeout the group drops it and a standby is assigned
// partition 0. The old leader may still be alive and think it leads; it
// cannot decide anyway: the new term begins by fencing the transactional
// id, and the old one's next commit fails with kafka.ErrFenced. So two
// instances never both append a decision.
func (s *Service) lead(ctx context.Context) error {
	t := &terms{svc: s, failed: make(chan error, 1)}
	kc := s.cfg.Kafka
	cl, err := kgo.NewClient(append(clientOpts(kc),
		kgo.ConsumerGroup(events.GroupPlannerElection),
		kgo.ConsumeTopics(electionTopic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(s.cfg.ElectionTimeout),
		// A member that does not rejoin a rebalance within this is dropped
		// from it; Kafka's default (a minute) would leave a group whose
		// leader died in the middle of a rebalance without one that long.
		kgo.RebalanceTimeout(s.cfg.ElectionTimeout),
		kgo.HeartbeatInterval(max(s.cfg.ElectionTimeout/6, 1)),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			if slices.Contains(a[electionTopic], 0) {
				t.begin(ctx)
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			if slices.Contains(r[electionTopic], 0) {
				t.end("revoked")
			}
		}),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { t.end("lost") }),
	)...)
	if err != nil {
		return fmt.Errorf("%w: Kafka: %w", ErrInvalidConfig, err)
	}
	cl.PauseFetchTopics(electionTopic)
	s.log.Info("standing by for the planner election", "group", events.GroupPlannerElection)
	// Polling drives nothing here (the group is managed in the background),
	// but a poll returns the group's fatal errors, such as a broker gone
	// for good.
	go func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
		}
	}()
	select {
	case <-ctx.Done():
		err = nil
	case err = <-t.failed:
	}
	t.end("stopping")
	cl.Close() // leaves the group: a standby is assigned at once
	return err
}

// terms runs one term of leadership at a time.
type terms struct {
	svc    *Service
	failed chan error // a term's run that ended by itself

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// begin starts a term: the service's whole run, from fencing and
// replaying the log to deciding.
func (t *terms) begin(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel != nil {
		return // already leading
	}
	t.svc.log.Info("leading: this planner decides now")
	t.svc.leading.Store(true)
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.cancel, t.done = cancel, done
	go func() {
		defer close(done)
		err := t.svc.run(tctx)
		if tctx.Err() == nil {
			if err == nil {
				err = fmt.Errorf("planner service: term ended by itself")
			}
			select {
			case t.failed <- err:
			default:
			}
		}
	}()
}

// end stops the current term, if any, and waits for it: a revoked leader
// must have stopped before the group hands partition 0 to anyone else.
func (t *terms) end(why string) {
	t.mu.Lock()
	cancel, done := t.cancel, t.done
	t.cancel, t.done = nil, nil
	t.mu.Unlock()
	if cancel == nil {
		return
	}
	t.svc.log.Info("no longer leading", "why", why)
	cancel()
	<-done
	t.svc.leading.Store(false)
}
