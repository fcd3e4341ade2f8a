package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events/kafka"
)

// KafkaCluster is the Kafka a test talks to. (It cannot be called Kafka:
// that is the function that returns it.)
type KafkaCluster struct {
	// Brokers are the seed broker addresses, host:port.
	Brokers []string
	// TopicPrefix is unique to the test, and is the Namespace of Config:
	// every topic, consumer group and transactional ID the test's code
	// names through Config is this test's alone on a shared broker.
	TopicPrefix string
	t           testing.TB
}

// Kafka returns a real Apache Kafka broker for t: KAFKA_BROKERS if set
// (comma-separated host:port), otherwise the broker this test binary
// shares (started at the first call, see the package doc). The test's
// Config carries a Namespace of its own, and its topics are deleted when
// t ends.
func Kafka(t testing.TB) *KafkaCluster {
	t.Helper()
	k := &KafkaCluster{TopicPrefix: topicPrefix(t.Name()), t: t}
	if env := os.Getenv("KAFKA_BROKERS"); env != "" {
		for _, b := range strings.Split(env, ",") {
			if b = strings.TrimSpace(b); b != "" {
				k.Brokers = append(k.Brokers, b)
			}
		}
		k.checkExternal()
	} else {
		b, err := sharedBroker()
		if err != nil {
			t.Fatalf("testenv.Kafka: %v", err)
		}
		k.Brokers = b.Brokers()
	}
	t.Cleanup(k.deleteTopics)
	return k
}

// Topic returns name under the test's prefix. Config's Namespace already
// makes every name the test's own; Topic is for names that must differ
// within one test.
func (k *KafkaCluster) Topic(name string) string { return k.TopicPrefix + name }

// Config is a kafka.Config for the cluster, in the test's Namespace,
// whose appends return once readers can see them (a test appends, then
// reads). Its FetchMaxWait is Drove's default: the broker answers a
// waiting fetch as soon as an append (or a transaction's commit marker)
// lands, so the wait only bounds how often an idle consumer asks again.
// At 50 ms the idle polling of one running system (24 executors and the
// services) took 0.40 of a core under the race detector, at 500 ms 0.12,
// and the broker's share fell with it.
func (k *KafkaCluster) Config() kafka.Config {
	return kafka.Config{Brokers: k.Brokers, Namespace: k.TopicPrefix, AwaitVisible: true}
}

// KafkaEnv is the environment that makes a `drove` process use cfg's
// brokers and namespace.
func KafkaEnv(cfg kafka.Config) []string {
	return []string{"KAFKA_BROKERS=" + strings.Join(cfg.Brokers, ","), "KAFKA_NAMESPACE=" + cfg.Namespace}
}

// CreateTopic creates Topic(name) with the given partitions, as Drove
// creates its topics (kafka.EnsureTopics), and returns its full name. Use
// it where the code under test expects topics to exist, as on brokers
// without auto-creation.
func (k *KafkaCluster) CreateTopic(ctx context.Context, name string, partitions int) string {
	k.t.Helper()
	topic := k.Topic(name)
	if err := kafka.EnsureTopics(ctx, k.Config(), partitions, topic); err != nil {
		k.t.Fatalf("testenv: create topic %s: %v", topic, err)
	}
	return topic
}

// checkExternal fails the test unless the KAFKA_BROKERS cluster answers
// within a few seconds.
func (k *KafkaCluster) checkExternal() {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := kafka.Ping(ctx, k.Config()); err != nil {
		k.t.Fatalf("testenv.Kafka: KAFKA_BROKERS=%q does not answer: %v (unset it to use a broker testenv starts)",
			os.Getenv("KAFKA_BROKERS"), err)
	}
}

// deleteTopics removes the test's topics from the shared broker, so that
// a long run does not pile up partitions. A failure is logged, not
// fatal: the test has already passed or failed on its own merits.
func (k *KafkaCluster) deleteTopics() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := k.Config()
	names, err := kafka.ListTopics(ctx, cfg)
	if err != nil {
		k.t.Logf("testenv: delete topics %s*: %v", k.TopicPrefix, err)
		return
	}
	if err := kafka.DeleteTopics(ctx, cfg, names...); err != nil {
		k.t.Logf("testenv: delete topics %v: %v", names, err)
	}
}

// topicPrefix is "test-<test name>-<random>-" in characters every Kafka
// accepts, short enough to leave room for the topic's own name within
// Kafka's 249-character limit.
func topicPrefix(testName string) string {
	var b strings.Builder
	for _, r := range testName {
		if b.Len() >= 60 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return fmt.Sprintf("test-%s-%s-", b.String(), randomHex(4))
}
