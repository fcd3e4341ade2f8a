package service

import (
	"context"
	"fmt"
	"sync"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
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
	el, err := kafka.JoinElection(s.cfg.Kafka, kafka.Election{
		Group: events.GroupPlannerElection, Topic: electionTopic, Timeout: s.cfg.ElectionTimeout,
		Elected: func() { t.begin(ctx) },
		Deposed: t.end,
	})
	if err != nil {
		return fmt.Errorf("%w: Kafka: %w", ErrInvalidConfig, err)
	}
	s.log.Info("standing by for the planner election", "group", events.GroupPlannerElection)
	select {
	case <-ctx.Done():
		err = nil
	case err = <-t.failed:
	}
	el.Leave() // ends the term, leaves the group: a standby is assigned at once
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
