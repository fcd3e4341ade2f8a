package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// WriteRaw writes value under key to topic as it is, outside any
// transaction and without encoding or checking it as an event: for tests
// of what a reader does with a record it cannot decode (garbage, a type
// of a newer Drove). Services append with a Producer, never with this.
func WriteRaw(ctx context.Context, cfg Config, topic string, key, value []byte) error {
	cl, err := NewClient(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	r := &kgo.Record{Topic: topic, Key: key, Value: value}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("kafka: write to %s: %w", topic, translate(err))
	}
	return nil
}
