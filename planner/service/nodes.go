package service

import (
	"context"
	"strconv"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner/nodes"
)

// decideNodes runs planner/nodes' pass first, so that a node declared
// lost or marked offline is seen by the requests' and migrations' passes
// that follow: they end the moves it takes part in.
func (l *loop) decideNodes(ctx context.Context) error {
	parts := l.heartbeatParts
	if parts == 0 {
		parts = l.svc.cfg.Partitions
	}
	env := nodes.Env{Inv: l.st.inv, Emptying: l.st.reqs.Emptying, Apply: l.st.applyDecision,
		Lease: max(l.svc.cfg.NodeLease, 0), Producer: l.svc.cfg.Producer,
		CheckKey: func(node string) string { return checkKey(node, parts) }}
	evs := nodes.Decide(env, l.st.nodes)
	if len(evs) == 0 {
		return nil
	}
	if err := l.append(ctx, messages(evs)); err != nil {
		return err
	}
	for _, e := range evs {
		l.svc.log.Info("node decided", "type", e.Type, "why", e.Reason.Why)
	}
	return nil
}

// checkKey is the key of node's LeaseCheck (see events.LeaseCheck): the
// first node+"/lease-check/"+i that Kafka's partitioner puts in the
// node's partition of drove.heartbeats, of parts partitions.
func checkKey(node string, parts int) string {
	want := kafka.PartitionOf(events.TopicHeartbeats, node, parts)
	for i := 0; ; i++ {
		k := node + "/lease-check/" + strconv.Itoa(i)
		if kafka.PartitionOf(events.TopicHeartbeats, k, parts) == want {
			return k
		}
	}
}

// partitionsOf counts topic's partitions among those rd reads.
func partitionsOf(rd *kafka.Reader, topic string) int {
	n := 0
	for tp := range rd.Ends() {
		if tp.Topic == topic {
			n++
		}
	}
	return n
}
