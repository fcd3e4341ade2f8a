package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// kafkaTempPrefix names the per-process directories under os.TempDir
// that hold a shared broker's storage and log.
const kafkaTempPrefix = "drove-testenv-kafka-"

// BrokerSettings are the server properties of the brokers tests start
// (the shared one, and the clusters of test/chaos and test/partition),
// over apachekafka's defaults. They make a small broker quick, not a
// different one: what Drove's code sees is Apache Kafka's behaviour.
var BrokerSettings = map[string]string{
	// Tests name topics by hand (kafka.Topic) as well as through
	// EnsureTopics; clients that ask get them created, as kfake did.
	"auto.create.topics.enable": "true",
	// Elections and groups in tests use sessions of a second or less.
	"group.min.session.timeout.ms": "100",
	// A broker that died is fenced by the controller after this, and its
	// partitions led by others: 3 s instead of 9 s in failure tests.
	"broker.session.timeout.ms":    "3000",
	"broker.heartbeat.interval.ms": "500",
	// Retention is applied every second, not every 5 minutes: a test of
	// a topic that deletes events sees them go.
	"log.retention.check.interval.ms": "1000",
	// ...from the broker's start, not after 30 s.
	"log.initial.task.delay.ms": "0",
	// Fewer threads and a small cleaner buffer: the tests share 2 cores.
	"num.network.threads":            "2",
	"num.io.threads":                 "2",
	"background.threads":             "2",
	"num.replica.fetchers":           "1",
	"log.cleaner.dedupe.buffer.size": "8388608",
}

var (
	brokerMu   sync.Mutex
	theBroker  *apachekafka.Cluster
	brokerDir  string
	brokerErr  error
	brokerOnce = new(sync.Once)
)

// sharedBroker starts the binary's broker once; every later call returns
// the same broker, or the same error.
func sharedBroker() (*apachekafka.Cluster, error) {
	brokerMu.Lock()
	defer brokerMu.Unlock()
	brokerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		theBroker, brokerDir, brokerErr = startSharedBroker(ctx)
	})
	return theBroker, brokerErr
}

// startSharedBroker starts one broker in a new temp directory and warms
// it up.
func startSharedBroker(ctx context.Context) (*apachekafka.Cluster, string, error) {
	sweepStaleBrokers(os.TempDir())
	dir, err := os.MkdirTemp("", kafkaTempPrefix)
	if err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, "", err
	}
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: dir, Settings: BrokerSettings})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("start Apache Kafka: %w", err)
	}
	if err := WarmUp(ctx, c.Config()); err != nil {
		_ = c.Kill()
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("warm up Apache Kafka: %w", err)
	}
	return c, dir, nil
}

// WarmUp makes a new broker create its internal topics (transactions'
// state, groups' offsets) with a transactional append and a kept
// position, so that no test's first wait includes their creation.
func WarmUp(ctx context.Context, cfg kafka.Config) error {
	cfg.Namespace = "testenv-warmup-"
	if err := kafka.EnsureTopics(ctx, cfg, 1, events.TopicRequests); err != nil {
		return err
	}
	defer kafka.DeleteTopics(context.WithoutCancel(ctx), cfg, events.TopicRequests)
	cfg.TransactionalID = "warmup"
	p, err := kafka.NewProducer(cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	ev := events.New(events.RequestApproved{Request: "warmup"}, events.WithProducer("testenv"),
		events.WithReason(events.Reason{Actor: "operator:testenv", Why: "warm up", RequestID: "warmup"}))
	if err := p.Append(ctx, events.TopicRequests, ev); err != nil {
		return err
	}
	cp, err := kafka.OpenCheckpoint(cfg, "warmup")
	if err != nil {
		return err
	}
	defer cp.Close()
	return cp.Save(ctx, kafka.Positions{{Topic: events.TopicRequests, Partition: 0}: 1})
}

// stopBroker stops the shared broker if one was started, and forgets it.
func stopBroker() error {
	brokerMu.Lock()
	defer brokerMu.Unlock()
	c, dir := theBroker, brokerDir
	theBroker, brokerDir, brokerErr, brokerOnce = nil, "", nil, new(sync.Once)
	if c == nil {
		return nil
	}
	// The broker's data is thrown away: a clean shutdown would only spend
	// seconds flushing it.
	return errors.Join(c.Kill(), os.RemoveAll(dir))
}

// sweepStaleBrokers removes broker directories whose test process is
// gone (its broker died with it: parent-death signal).
func sweepStaleBrokers(tmp string) {
	sweepDirs(tmp, kafkaTempPrefix, func(string) bool { return false })
}
