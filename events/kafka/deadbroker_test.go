package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// An append to a broker that died (SIGKILL) after its records were sent
// ends by its caller's deadline with ErrAborted, nothing recorded: on its
// own, franz-go waits for the outcome of records in flight until the
// broker returns, and a gateway holding such an append held every request
// behind it. After the broker's return the producer appends again, and a
// reader sees the committed events only.
func TestAppendToADeadBrokerEndsByItsDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Kill() })
	cfg := c.Config()
	cfg.TransactionalID, cfg.AwaitVisible = "dead-broker-test", true
	if err := kafka.EnsureTopics(ctx, cfg, 1, events.TopicRequests); err != nil {
		t.Fatal(err)
	}
	p, err := kafka.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ev := func(r string) events.Envelope {
		return events.New(events.RequestApproved{Request: r}, events.WithProducer("test"),
			events.WithReason(events.Reason{Actor: "operator:test", Why: "testing", RequestID: r}))
	}
	first, lost, after := ev("r1"), ev("r2"), ev("r3")
	if err := p.Append(ctx, events.TopicRequests, first); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, 3*time.Second)
	t0 := time.Now()
	err = p.Append(actx, events.TopicRequests, lost)
	acancel()
	took := time.Since(t0)
	if !errors.Is(err, kafka.ErrAborted) && !errors.Is(err, kafka.ErrUncertain) {
		t.Fatalf("append to a dead broker: %v after %s, want ErrAborted or ErrUncertain", err, took)
	}
	t.Logf("the append to a dead broker ended after %s: %v", took.Round(time.Millisecond), err)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Append(ctx, events.TopicRequests, after); err != nil {
		t.Fatalf("append after the broker's return: %v", err)
	}
	recs, err := kafka.ReadAll(ctx, cfg, events.TopicRequests)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.Event.ID)
	}
	if len(ids) != 2 || ids[0] != first.ID || ids[1] != after.ID {
		t.Fatalf("the log holds %v; want the first and the last append (%s, %s)", ids, first.ID, after.ID)
	}
}
