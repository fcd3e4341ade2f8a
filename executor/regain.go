package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// How an executor regains its lease after a fall (DESIGN.md, "Node
// lifecycle"). A heartbeat that lands again proves the node reaches the
// log, not that the planner still counts on it. While the node was cut
// off the planner may have found its lease lapsed and appended a
// LeaseCheck, which then lies before this heartbeat in the node's
// partition; reading it back, the planner declares the node lost, even
// after this heartbeat landed when its own read lags. A move started
// meanwhile runs on a node the planner gave up on (test/partition: a begin
// phase dispatched during a broker's cut ended success 0.4 s after the
// planner declared its source lost).
//
// So the executor reads what the planner reads: its node's partition of
// drove.heartbeats from its last renewal before the fall up to the
// heartbeat that landed, and judges the last LeaseCheck of the node there
// as the planner does (events.LeaseCheck). None, or one with a heartbeat
// of the node after the read it names: the lease is back, for moves
// dispatched from that heartbeat's start on. One that declares the node
// lost: the executor waits for the planner's word in drove.inventory, the
// node offline, stamped after the check, and takes only moves dispatched
// after it: the planner sends none to an offline node until an operator
// brings it back. Until then the fence stays down: nothing starts, no
// switch.
//
// The wait is bounded by the fence. The planner judges its check when it
// reads it back, and a heartbeat read in the same batch still keeps the
// node; a check it resent, or one a restarted planner forgot, is never
// judged. So a check the log says declares the node lost may never be
// followed by the loss: seen in test/partition, where the executor waited
// for a loss that never came and refused every move dispatched to its
// node. The planner reads back a check it could append within moments,
// so past a fence with no loss read the executor takes the lease back,
// for moves dispatched from then on.

// regain proves the lease after a fall, once the heartbeat id, begun at
// at, landed; since is the last renewal before the fall.
func (e *Executor) regain(ctx context.Context, since, at time.Time, id string) {
	from, err := e.regainFrom(ctx, since, at, id)
	if err != nil {
		e.lease.unproven()
		if ctx.Err() == nil {
			e.log.Error("the lease stays down: could not read whether the planner declared this node lost", "err", err)
		}
		return
	}
	e.lease.regain(from)
}

// regainFrom returns the stamp from which dispatches may start again: the
// heartbeat's start, or, when the planner declares the node lost, its
// loss, once read.
func (e *Executor) regainFrom(ctx context.Context, since, at time.Time, id string) (time.Time, error) {
	check, lost, err := e.lastCheck(ctx, since, id)
	if err != nil {
		return time.Time{}, err
	}
	if !lost {
		e.log.Info("lease regained: a heartbeat landed, and no lease check of the planner's declares this node lost",
			"since", at)
		return at, nil
	}
	e.log.Warn("the planner declares this node lost: a lease check it appended during the cut comes before this "+
		"node's heartbeats; acting on nothing until the planner says it is offline", "check_sent", check.Sent)
	wctx, cancel := context.WithTimeout(ctx, e.cfg.Fence)
	defer cancel()
	off, err := e.awaitOffline(wctx, check.Sent)
	switch {
	case err == nil:
		e.log.Warn("declared lost, as the lease check said: moves dispatched from now on may start; "+
			"the planner sends none until an operator brings this node online", "offline_at", off)
	case ctx.Err() == nil && wctx.Err() != nil:
		off, err = time.Now(), nil
		e.log.Warn("the planner did not declare this node lost within the fence after its lease check; "+
			"taking the lease back for moves dispatched from now on", "check_sent", check.Sent, "fence", e.cfg.Fence)
	}
	return off, err
}

// lastCheck reads the node's partition of drove.heartbeats from since up
// to the heartbeat id, and returns the last LeaseCheck of the node there
// and whether it declares the node lost: no heartbeat of the node lies
// between the read it names and it. One whose read began before since,
// with no heartbeat of the node read between since and it, counts as
// declaring: the records before since are not read.
func (e *Executor) lastCheck(ctx context.Context, since time.Time, id string) (events.LeaseCheck, bool, error) {
	var check events.LeaseCheck
	var lost bool
	beat := int64(0) // past the last heartbeat of the node read
	err := e.readLog(ctx, events.TopicHeartbeats, since, func(rec kafka.Record, p events.Payload) bool {
		switch v := p.(type) {
		case events.NodeHeartbeat:
			if v.Node == e.cfg.Node {
				beat = rec.Offset + 1
			}
		case events.LeaseCheck:
			if v.Node == e.cfg.Node {
				check, lost = v, beat <= v.Read
			}
		}
		return rec.Event.ID == id
	})
	return check, lost, err
}

// awaitOffline follows the node's partition of drove.inventory until a
// NodeUpdated says it is offline, stamped at or after since, and returns
// that stamp.
func (e *Executor) awaitOffline(ctx context.Context, since time.Time) (time.Time, error) {
	var at time.Time
	err := e.readLog(ctx, events.TopicInventory, since, func(rec kafka.Record, p events.Payload) bool {
		if u, ok := p.(events.NodeUpdated); ok && u.Name == e.cfg.Node && u.Offline && !rec.Event.Time.Before(since) {
			at = rec.Event.Time
			return true
		}
		return false
	})
	return at, err
}

// readLog reads the node's partition of topic from the first record
// stamped at or after since, handing each record to done until it says
// so. It follows the partition: the heartbeat a proof reads up to is
// committed, yet may not be visible when the reader opens (its
// transaction's marker not written yet), and a read that stopped at the
// end it had then missed it (chaos test: the read's end retried as a
// fault, the lease never came back).
func (e *Executor) readLog(ctx context.Context, topic string, since time.Time,
	done func(kafka.Record, events.Payload) bool) error {
	var r *kafka.Reader
	err := e.startStep(ctx, "opening "+topic, func() error {
		from, err := kafka.After(ctx, e.cfg.Kafka, since, topic)
		if err == nil {
			r, err = kafka.NewReader(ctx, e.cfg.Kafka, kafka.ReadOptions{Topics: []string{topic},
				Keys: map[string][]string{topic: {e.cfg.Node}}, From: from, Follow: true})
		}
		return err
	})
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		b, err := e.next(ctx, r)
		if err != nil {
			return err
		}
		recs, err := b.Decode()
		if err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		for _, rec := range recs {
			p, err := rec.Event.DecodePayload()
			if err != nil {
				return fmt.Errorf("executor: %s: %w", rec, err)
			}
			if done(rec, p) {
				return nil
			}
		}
	}
}
