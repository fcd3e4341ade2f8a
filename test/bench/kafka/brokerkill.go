package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// kafkaBrokerSessionMs is Kafka's default broker.session.timeout.ms,
// which the 3-node cluster keeps: how long the controller waits for a
// silent broker before it fences it and moves its partitions' leadership.
const kafkaBrokerSessionMs = 9000

// loadEvents are appended before the kill, so that one partition of
// drove.requests holds the most records.
const loadEvents = 300

// measureBrokerKill starts a 3-node cluster in dir, loads drove.requests
// (three replicas), SIGKILLs the leader of its busiest partition and
// times the first successful append to that partition afterwards.
func measureBrokerKill(ctx context.Context, dir string, s *summary, stdout io.Writer) error {
	began := time.Now()
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: dir, Nodes: 3, Settings: brokerSettings})
	if err != nil {
		return err
	}
	defer func() { _ = c.Kill() }()
	s.BrokerSessionTimeoutMs = kafkaBrokerSessionMs
	fmt.Fprintf(stdout, "3-node cluster at %v (started in %s)\n", c.Brokers(), time.Since(began).Round(time.Millisecond))
	cfg := c.Config()
	cfg.Namespace, cfg.ReplicationFactor = "kill.", 3
	if err := kafka.EnsureTopics(ctx, cfg, 3, events.TopicRequests); err != nil {
		return err
	}
	pcfg := cfg
	pcfg.TransactionalID = "bench-kill"
	prod, err := kafka.NewProducer(pcfg)
	if err != nil {
		return err
	}
	defer prod.Close()
	for i := range loadEvents {
		// Keys of uneven spread: a quarter of the load shares one key.
		id := fmt.Sprintf("load-%d", i)
		if i%4 == 0 {
			id = "load-hot"
		}
		if err := prod.Append(ctx, events.TopicRequests, request(id)); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	busiest, victim, err := busiestLeader(ctx, cfg)
	if err != nil {
		return err
	}
	probe := probeFor(busiest)
	killed := time.Now()
	if err := c.Node(int(victim)).Kill(); err != nil {
		return err
	}
	attempts, err := appendUntilDone(ctx, prod, probe)
	if err != nil {
		return err
	}
	d := time.Since(killed)
	s.BrokerKillToAppendS, s.KilledBroker, s.KilledPartition, s.AppendAttempts = ptr(d.Seconds()), int(victim), busiest.String(), attempts
	fmt.Fprintf(stdout, "broker %d (leader of %s) SIGKILLed; an append to it succeeded %.2fs later (attempt %d)\n",
		victim, busiest, d.Seconds(), attempts)
	return nil
}

// busiestLeader finds the partition of drove.requests with the most
// records and the broker leading it.
func busiestLeader(ctx context.Context, cfg kafka.Config) (kafka.TopicPartition, int32, error) {
	ends, err := kafka.Ends(ctx, cfg, events.TopicRequests)
	if err != nil {
		return kafka.TopicPartition{}, 0, err
	}
	var busiest kafka.TopicPartition
	most := int64(-1)
	for tp, end := range ends {
		if end > most || end == most && tp.Partition < busiest.Partition {
			busiest, most = tp, end
		}
	}
	leaders, err := kafka.Leaders(ctx, cfg, events.TopicRequests)
	if err != nil {
		return busiest, 0, err
	}
	leader, ok := leaders[busiest]
	if !ok || leader < 0 {
		return busiest, 0, fmt.Errorf("%s has no leader", busiest)
	}
	return busiest, leader, nil
}

// probeFor is a request whose key lands in tp.
func probeFor(tp kafka.TopicPartition) events.Envelope {
	for i := 0; ; i++ {
		ev := request(fmt.Sprintf("probe-%d", i))
		if kafka.PartitionOf(tp.Topic, ev.Key, 3) == tp.Partition {
			return ev
		}
	}
}

// appendUntilDone appends ev until an append succeeds, each attempt
// bounded, within two minutes; it returns the attempts made.
func appendUntilDone(ctx context.Context, prod *kafka.Producer, ev events.Envelope) (int, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := prod.Append(actx, events.TopicRequests, ev)
		cancel()
		if err == nil {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("no append succeeded within 2 minutes of the kill: %w", err)
		}
		select { // retry pacing, as a service's backoff would
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return n, ctx.Err()
		}
	}
}

func request(id string) events.Envelope {
	return events.New(events.EvacuationRequested{Request: id, Nodes: []string{"node-1"}, Mode: events.EvacAll},
		events.WithProducer("bench"), events.WithReason(events.Reason{Actor: "operator:bench", Why: "broker kill", RequestID: id}))
}
