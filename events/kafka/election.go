package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Election elects one leader among the members of a consumer group, with
// Kafka's group membership: every member "consumes" Topic with fetching
// paused, and whoever is assigned its partition 0 leads. The balancer is
// cooperative and sticky: a member joining leaves partition 0 where it is,
// and a partition that moves is revoked from its owner in one rebalance and
// given to the new owner only in the next, so the old leader's Deposed has
// returned before anyone else's Elected is called. A leader that dies or
// is cut off stops heartbeating; after Timeout the group drops it. It may
// still think it leads: whatever it writes must be fenced (Producer.Fence)
// by the next leader.
type Election struct {
	// Group is the consumer group of the election; it commits no offsets.
	Group string
	// Topic is any topic every cluster has; its partition 0 is the prize.
	Topic string
	// Timeout is the session (and rebalance) timeout: how long a silent
	// leader keeps leading.
	Timeout time.Duration
	// Elected is called when this member becomes the leader; Deposed when
	// it stops being one (why: "revoked", "lost", "leaving"). Deposed must
	// return only once the member has stopped acting as the leader. They
	// run on the election's goroutines, one at a time.
	Elected func()
	Deposed func(why string)
}

// Elector is one member of an Election.
type Elector struct {
	cl     *kgo.Client
	e      Election
	mu     sync.Mutex
	leads  bool
	done   chan struct{}
	cancel context.CancelFunc
}

// JoinElection joins e's group as a member and returns at once; Elected is
// called when this member is chosen.
func JoinElection(cfg Config, e Election) (*Elector, error) {
	if e.Group == "" || e.Topic == "" || e.Timeout <= 0 || e.Elected == nil || e.Deposed == nil {
		return nil, fmt.Errorf("%w: election: Group, Topic, Timeout, Elected and Deposed are required", ErrInvalidConfig)
	}
	el := &Elector{e: e, done: make(chan struct{})}
	cl, err := NewClient(cfg,
		kgo.ConsumerGroup(cfg.wire(e.Group)),
		kgo.ConsumeTopics(cfg.wire(e.Topic)),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(e.Timeout),
		// A member that does not rejoin a rebalance within this is dropped
		// from it; Kafka's default (a minute) would leave a group whose
		// leader died in the middle of a rebalance without one that long.
		kgo.RebalanceTimeout(e.Timeout),
		kgo.HeartbeatInterval(max(e.Timeout/6, 1)),
		kgo.DisableAutoCommit(),
		noFetchSessions,
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			if slices.Contains(a[cfg.wire(e.Topic)], 0) {
				el.set(true, "")
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			if slices.Contains(r[cfg.wire(e.Topic)], 0) {
				el.set(false, "revoked")
			}
		}),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { el.set(false, "lost") }),
	)
	if err != nil {
		return nil, err
	}
	cl.PauseFetchTopics(cfg.wire(e.Topic))
	el.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	el.cancel = cancel
	// Polling drives nothing here (the group is managed in the background),
	// but a poll surfaces the group's fatal errors.
	go func() {
		defer close(el.done)
		for ctx.Err() == nil {
			if fs := cl.PollFetches(ctx); fs.IsClientClosed() {
				return
			}
		}
	}()
	return el, nil
}

func (el *Elector) set(leads bool, why string) {
	el.mu.Lock()
	defer el.mu.Unlock()
	if el.leads == leads {
		return
	}
	el.leads = leads
	if leads {
		el.e.Elected()
	} else {
		el.e.Deposed(why)
	}
}

// Leave deposes this member if it leads (Deposed "leaving") and leaves the
// group, so another member is elected at once.
func (el *Elector) Leave() {
	el.set(false, "leaving")
	el.cancel()
	<-el.done
	el.cl.Close()
}
