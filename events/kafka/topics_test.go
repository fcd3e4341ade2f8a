package kafka

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drovehq/drove/events"
)

// Topics created by hand that delete records after a millisecond (Apache
// Kafka's default is 7 days; the test shortens the wait, not the rule):
// the topics EnsureTopics creates carry Drove's settings, described on the
// broker, and keep every record through the broker's retention pass,
// while a topic created by hand with finite retention is refused, naming
// the topic and the setting, unless the operator allowed it.
func TestEnsureTopicsKeepsTheLogForever(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 0)
	cl, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"drove.byhand", "other"} {
		if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"retention.ms": kadm.StringPtr("1")}, cfg.wire(topic)); err != nil {
			t.Fatal(err)
		}
	}
	if err := EnsureTopics(ctx, cfg, 2, "drove.new"); err != nil {
		t.Fatal(err)
	}
	err = EnsureTopics(ctx, cfg, 2, "drove.byhand", "drove.new")
	if !errors.Is(err, ErrTopicConfig) || !strings.Contains(err.Error(), "topic "+cfg.wire("drove.byhand")+" has retention.ms=") ||
		strings.Contains(err.Error(), "drove.new has") {
		t.Fatalf("EnsureTopics over a topic with finite retention = %v, want ErrTopicConfig naming drove.byhand and retention.ms", err)
	}
	allowed := cfg
	allowed.AllowFiniteRetention = true
	if err := EnsureTopics(ctx, allowed, 2, "drove.byhand", "drove.new"); err != nil {
		t.Fatalf("EnsureTopics with AllowFiniteRetention = %v, want it to run", err)
	}
	checkDescribed(t, cfg, "drove.new", 2)

	p := newProducer(t, cfg)
	old := event("r-1")
	old.Time = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) // years of log
	for _, topic := range []string{"drove.new", "other"} {
		if err := p.Append(ctx, topic, old); err != nil {
			t.Fatal(err)
		}
	}
	// The broker's retention pass runs every second (testenv's settings).
	// Its log's start is polled, not read: a read of a partition whose
	// records are deleted under it waits for offsets that are gone.
	for {
		starts, ends, err := Bounds(ctx, cfg, "other")
		if err != nil {
			t.Fatal(err)
		}
		tp := TopicPartition{"other", 0}
		if ends[tp] > 0 && starts[tp] == ends[tp] {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the broker's retention pass never emptied the topic created by hand")
		case <-time.After(100 * time.Millisecond): // polling a condition under a deadline
		}
	}
	if recs, err := ReadAll(ctx, cfg, "drove.new"); err != nil || len(recs) != 1 {
		t.Errorf("drove.new holds %d events after the broker's retention pass (%v), want 1", len(recs), err)
	}
}

// checkDescribed describes topic on the broker: its partitions, replicas
// and every setting are what EnsureTopics creates it with.
func checkDescribed(t *testing.T, cfg Config, topic string, partitions int) {
	t.Helper()
	d, err := Describe(testContext(t), cfg, topic)
	if err != nil {
		t.Fatal(err)
	}
	got := d[topic]
	if got.Partitions != partitions {
		t.Errorf("%s has %d partitions, want %d", topic, got.Partitions, partitions)
	}
	if rf := cfg.withDefaults().ReplicationFactor; rf > 0 && got.ReplicationFactor != int(rf) {
		t.Errorf("%s has %d replicas, want %d", topic, got.ReplicationFactor, rf)
	}
	for k, want := range topicConfig(cfg.withDefaults(), topic) {
		if got.Configs[k] != want {
			t.Errorf("%s: %s=%s, want %s", topic, k, got.Configs[k], want)
		}
	}
}

// The heartbeats topic is current state: EnsureTopics creates it
// compacted, with hourly segments, and the broker's compaction keeps each
// node's latest beat while the beats before it go. One created by hand
// with compaction and deletion by age (which may drop a node's last
// beat) is refused; one that keeps every beat is only warned about.
//
// kfake: its Compact compacts at once. Apache Kafka compacts a segment
// only once it has rolled (hourly on this topic, as it must be) and its
// cleaner has passed, which a test cannot ask for.
func TestEnsureTopicsCompactsHeartbeatsOnly(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "drove.byhand"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := Config{Brokers: c.ListenAddrs(), TransactionalID: "heartbeats-test", FetchMaxWait: 100 * time.Millisecond}
	if err := EnsureTopics(ctx, cfg, 1, events.TopicInventory, events.TopicHeartbeats); err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	described, err := adm.DescribeTopicConfigs(ctx, events.TopicInventory, events.TopicHeartbeats)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		events.TopicInventory:  {"cleanup.policy": "delete", "retention.ms": "-1"},
		events.TopicHeartbeats: {"cleanup.policy": "compact", "segment.ms": "3600000"},
	}
	for _, rc := range described {
		got := map[string]string{}
		for _, c := range rc.Configs {
			got[c.Key] = c.MaybeValue()
		}
		for k, v := range want[rc.Name] {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q", rc.Name, k, got[k], v)
			}
		}
	}

	p := newProducer(t, cfg)
	beat := func(node string, i int) events.Envelope {
		return events.New(events.NodeHeartbeat{Node: node, IntervalMS: 5000, Sent: time.Unix(int64(i), 0)},
			events.WithProducer("test"), events.WithReason(events.Reason{Actor: "executor:" + node, Why: "lease"}))
	}
	var last []string
	for i := range 5 {
		for _, n := range []string{"n1", "n2"} {
			e := beat(n, i)
			if err := p.Append(ctx, events.TopicHeartbeats, e); err != nil {
				t.Fatal(err)
			}
			if i == 4 {
				last = append(last, e.ID)
			}
		}
	}
	c.Compact()
	recs, err := ReadAll(ctx, cfg, events.TopicHeartbeats)
	if err != nil {
		t.Fatal(err)
	}
	got := ids(recs)
	if len(got) >= 10 || !slices.Contains(got, last[0]) || !slices.Contains(got, last[1]) {
		t.Fatalf("after compaction the topic holds %v; want fewer than the 10 beats, the last of each node (%v) among them", got, last)
	}

	for policy, refused := range map[string]bool{"compact,delete": true, "delete": false} {
		if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kadm.StringPtr(policy)}}, events.TopicHeartbeats); err != nil {
			t.Fatal(err)
		}
		err := EnsureTopics(ctx, cfg, 1, events.TopicHeartbeats)
		if refused != errors.Is(err, ErrTopicConfig) {
			t.Errorf("heartbeats with cleanup.policy=%s: EnsureTopics = %v, refused: want %v", policy, err, refused)
		}
	}
}
