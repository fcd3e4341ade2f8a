package main

import (
	"io"
	"strings"
	"testing"

	"github.com/drovehq/drove/test/bench/cli"
)

// The bench runs on Apache Kafka unless told otherwise, and refuses a
// broker it does not know, naming the ones it does.
func TestKafkaFlag(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil || cfg.kafka != cli.KafkaApache {
		t.Fatalf("no flags: -kafka %q, %v; want %q", cfg.kafka, err, cli.KafkaApache)
	}
	if cfg, err = parseFlags([]string{"-kafka", "embedded"}, io.Discard); err != nil || cfg.kafka != cli.KafkaEmbedded {
		t.Fatalf("-kafka embedded: %q, %v", cfg.kafka, err)
	}
	_, err = parseFlags([]string{"-kafka", "kfake"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "want apache or embedded") {
		t.Fatalf("-kafka kfake: %v; want a refusal naming apache and embedded", err)
	}
}
