package apachekafka_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/test/testenv"
)

// TestOneNodeRestartsWithItsTopics starts one broker, creates a topic,
// stops it cleanly and starts it again on the same directory: the same
// cluster answers on the same port with the topic.
func TestOneNodeRestartsWithItsTopics(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Kill() })
	cfg := c.Config()
	if err := kafka.EnsureTopics(ctx, cfg, 2, events.TopicRequests); err != nil {
		t.Fatal(err)
	}
	addr := c.Brokers()[0]
	if err := c.Stop(time.Minute); err != nil {
		t.Fatal(err)
	}
	if c.Nodes[0].Running() {
		t.Fatal("the node runs after Stop")
	}
	again, err := apachekafka.Start(ctx, apachekafka.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.Kill() })
	if got := again.Brokers()[0]; got != addr {
		t.Fatalf("restarted on %s, was %s", got, addr)
	}
	topics, err := kafka.ListTopics(ctx, again.Config())
	if err != nil {
		t.Fatal(err)
	}
	if !contains(topics, events.TopicRequests) {
		t.Fatalf("topics after a restart: %v, want %s among them", topics, events.TopicRequests)
	}
}

// TestThreeNodesOutliveOneKilled starts a cluster of three, kills one
// with SIGKILL, appends through the other two, and starts it again.
func TestThreeNodesOutliveOneKilled(t *testing.T) {
	ctx := context.Background()
	// The tests' settings (testenv): a dead node fenced after 3 s, not 9.
	// TestOneNodeRestartsWithItsTopics runs on the defaults.
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: t.TempDir(), Nodes: 3, Settings: testenv.BrokerSettings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Kill() })
	cfg := c.Config()
	cfg.ReplicationFactor = 3
	if err := kafka.EnsureTopics(ctx, cfg, 1, events.TopicRequests); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: started", time.Now().Format("15:04:05.000"))
	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	cfg.TransactionalID = "apachekafka-test"
	p, err := kafka.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ev := events.New(events.RequestApproved{Request: "r1"}, events.WithProducer("test"),
		// A long reason: the batch goes snappy-compressed (franz-go
		// sends a batch too small to gain uncompressed).
		events.WithReason(events.Reason{Actor: "operator:test", Why: strings.Repeat("testing ", 500), RequestID: "r1"}))
	if err := p.Append(actx, events.TopicRequests, ev); err != nil {
		t.Fatalf("append with one of three brokers down: %v", err)
	}
	t.Logf("%s: appended", time.Now().Format("15:04:05.000"))
	if err := c.Node(2).Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: restarted", time.Now().Format("15:04:05.000"))
	recs, err := kafka.ReadAll(ctx, cfg, events.TopicRequests)
	if err != nil || len(recs) != 1 {
		t.Fatalf("read back: %d records, %v; want 1", len(recs), err)
	}
	// The append was snappy-compressed, so the leader unpacked snappy-java's native code: into the node's own
	// temporary directory, not /tmp, where a killed broker left it.
	var unpacked []string
	for _, n := range c.Nodes {
		m, _ := filepath.Glob(filepath.Join(n.Dir, "tmp", "snappy-*"))
		unpacked = append(unpacked, m...)
	}
	if len(unpacked) == 0 {
		t.Fatal("no node unpacked snappy-java into its own tmp directory")
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
