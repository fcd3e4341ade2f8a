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
// A topic that does not exist is created by a broker that allows it, with
// the broker's defaults, as for any client that writes first.
func WriteRaw(ctx context.Context, cfg Config, topic string, key, value []byte) error {
	cl, err := NewClient(cfg, kgo.AllowAutoTopicCreation())
	if err != nil {
		return err
	}
	defer cl.Close()
	r := &kgo.Record{Topic: cfg.wire(topic), Key: key, Value: value}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("kafka: write to %s: %w", topic, translate(err))
	}
	return nil
}

// WriteRecords writes recs as they are, each to its own Topic and
// Partition with its Key, Value, Headers and Time (a zero Time is the
// time of writing), outside any transaction, in order within each
// partition; Offset is the log's to give. For tests and tools that copy a
// log (a tampered copy for `drove verify-log`), never for services.
func WriteRecords(ctx context.Context, cfg Config, recs []Raw) error {
	if len(recs) == 0 {
		return nil
	}
	cl, err := NewClient(cfg, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	batch := make([]*kgo.Record, 0, len(recs))
	for _, r := range recs {
		kr := &kgo.Record{Topic: cfg.wire(r.Topic), Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Time}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		batch = append(batch, kr)
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		return fmt.Errorf("kafka: write %d records: %w", len(recs), translate(err))
	}
	return nil
}

// WriteAborted writes recs in a transaction and aborts it: what a
// producer that died or was fenced mid-append leaves in the log, records
// that take offsets but that read-committed readers never see, and an
// abort marker. For tests of readers across such gaps, never for
// services. It returns once readers are past the abort.
func WriteAborted(ctx context.Context, cfg Config, transactionalID string, recs []Raw) error {
	cl, err := NewClient(cfg, kgo.TransactionalID(cfg.wire(transactionalID)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("kafka: begin transaction: %w", translate(err))
	}
	batch := make([]*kgo.Record, 0, len(recs))
	for _, r := range recs {
		batch = append(batch, &kgo.Record{Topic: cfg.wire(r.Topic), Partition: r.Partition, Key: r.Key, Value: r.Value})
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		return fmt.Errorf("kafka: write %d records: %w", len(recs), translate(err))
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("kafka: abort: %w", translate(err))
	}
	p := &Producer{cfg: cfg.withDefaults(), cl: cl}
	p.awaitVisible(ctx, batch)
	return nil
}
