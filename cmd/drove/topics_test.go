package main

import (
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/test/testenv"
)

// A service started over a topic the broker would delete events from
// refuses to run, naming the topic and the setting; the operator's
// override (flag or environment) lets it run. New topics get the
// partition count asked for.
func TestServicesRefuseTopicsThatDeleteEvents(t *testing.T) {
	// The topic that deletes events is one the broker created itself,
	// with its defaults (7 days), for a client that wrote to it first.
	k := testenv.Kafka(t)
	cfg := k.Config()
	if err := kafka.WriteRaw(t.Context(), cfg, events.TopicRequests, []byte("k"), []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KAFKA_NAMESPACE", cfg.Namespace)
	brokers := strings.Join(k.Brokers, ",")
	code, out, errs := run(t, "", "seed", "--demo", "--brokers", brokers, "--partitions", "5")
	if code == exitOK || !strings.Contains(errs, "topic "+cfg.Namespace+"drove.requests has retention.ms=") {
		t.Fatalf("seed over a topic with finite retention: exit %d\n%s\n%s", code, out, errs)
	}
	t.Setenv("DROVE_ALLOW_FINITE_RETENTION", "1")
	if code, out, errs = run(t, "", "seed", "--demo", "--brokers", brokers, "--partitions", "5"); code != exitOK {
		t.Fatalf("seed with DROVE_ALLOW_FINITE_RETENTION=1: exit %d\n%s\n%s", code, out, errs)
	}
	t.Setenv("DROVE_ALLOW_FINITE_RETENTION", "")
	ctx := t.Context()
	r, err := kafka.NewReader(ctx, cfg, kafka.ReadOptions{Topics: []string{events.TopicOpcodes}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := len(r.Ends()); n != 5 {
		t.Fatalf("drove.opcodes has %d partitions, want the 5 of --partitions", n)
	}
	code, out, errs = run(t, "", "seed", "--demo", "--brokers", brokers, "--allow-finite-retention")
	if code != exitOK {
		t.Fatalf("seed with --allow-finite-retention: exit %d\n%s\n%s", code, out, errs)
	}
}
