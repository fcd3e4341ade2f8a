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

// A broker whose defaults delete records after a millisecond (Apache
// Kafka's are 7 days; the test shortens the wait, not the rule): the
// topics EnsureTopics creates keep every record through the broker's
// retention pass, while a topic created by hand with the broker's
// retention is refused, naming the topic and the setting, unless the
// operator allowed it.
func TestEnsureTopicsKeepsTheLogForever(t *testing.T) {
	ctx := testContext(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "drove.byhand", "other"),
		kfake.BrokerConfigs(map[string]string{"log.retention.ms": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := Config{Brokers: c.ListenAddrs(), TransactionalID: "topics-test", FetchMaxWait: 100 * time.Millisecond}
	if err := EnsureTopics(ctx, cfg, 2, "drove.new"); err != nil {
		t.Fatal(err)
	}
	err = EnsureTopics(ctx, cfg, 2, "drove.byhand", "drove.new")
	if !errors.Is(err, ErrTopicConfig) || !strings.Contains(err.Error(), "topic drove.byhand has retention.ms=") ||
		strings.Contains(err.Error(), "drove.new has") {
		t.Fatalf("EnsureTopics over a topic with finite retention = %v, want ErrTopicConfig naming drove.byhand and retention.ms", err)
	}
	allowed := cfg
	allowed.AllowFiniteRetention = true
	if err := EnsureTopics(ctx, allowed, 2, "drove.byhand", "drove.new"); err != nil {
		t.Fatalf("EnsureTopics with AllowFiniteRetention = %v, want it to run", err)
	}
	cl, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	described, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, "drove.new")
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range described {
		for _, c := range rc.Configs {
			if want, ok := topicConfig(cfg.withDefaults(), rc.Name)[c.Key]; ok && c.MaybeValue() != want {
				t.Errorf("%s: %s=%s, want %s", rc.Name, c.Key, c.MaybeValue(), want)
			}
		}
	}

	p := newProducer(t, cfg)
	old := event("r-1")
	old.Time = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) // years of log
	for _, topic := range []string{"drove.new", "other"} {
		if err := p.Append(ctx, topic, old); err != nil {
			t.Fatal(err)
		}
	}
	c.ApplyRetention()
	for topic, want := range map[string]int{"drove.new": 1, "other": 0} {
		recs, err := ReadAll(ctx, cfg, topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != want {
			t.Errorf("%s holds %d events after the broker's retention pass, want %d", topic, len(recs), want)
		}
	}
}

// Compaction deletes all but a key's latest event: refused like retention.
func TestEnsureTopicsRefusesACompactedTopic(t *testing.T) {
	ctx := testContext(t)
	cfg := newCluster(t, 0)
	cl, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "retention.ms": kadm.StringPtr("-1"),
		"retention.bytes": kadm.StringPtr("-1")}, cfg.wire(events.TopicInventory)); err != nil {
		t.Fatal(err)
	}
	err = EnsureTopics(ctx, cfg, 3, events.TopicInventory)
	if !errors.Is(err, ErrTopicConfig) || !strings.Contains(err.Error(), "topic "+cfg.wire(events.TopicInventory)+" has cleanup.policy=compact") {
		t.Fatalf("EnsureTopics over a compacted topic = %v", err)
	}
}

// An event larger than MaxRecordBytes is refused before anything is
// written, with an error that says so.
func TestAppendRefusesARecordOverMaxRecordBytes(t *testing.T) {
	cfg := newCluster(t, 1, "drove.audit")
	cfg.MaxRecordBytes = 4096
	ctx := testContext(t)
	p := newProducer(t, cfg)
	big := events.New(events.AuditRecorded{Action: "a", Subject: "s", Outcome: events.AuditDenied,
		Detail: strings.Repeat("x", 8192)}, events.WithProducer("test"),
		events.WithReason(events.Reason{Actor: "operator:test", Why: "testing"}))
	err := p.Append(ctx, "drove.audit", event("r-1"), big)
	if !errors.Is(err, ErrRecordTooLarge) || !strings.Contains(err.Error(), "MaxRecordBytes") {
		t.Fatalf("append of an 8 KiB event with a 4 KiB bound: %v", err)
	}
	if recs, err := ReadAll(ctx, cfg, "drove.audit"); err != nil || len(recs) != 0 {
		t.Fatalf("after the refusal the topic holds %d events (%v), want none", len(recs), err)
	}
}

// The heartbeats topic is current state: EnsureTopics creates it
// compacted, with hourly segments, and the broker's compaction keeps each
// node's latest beat while the beats before it go. One created by hand
// with compaction and deletion by age (which may drop a node's last
// beat) is refused; one that keeps every beat is only warned about.
func TestEnsureTopicsCompactsHeartbeatsOnly(t *testing.T) {
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
