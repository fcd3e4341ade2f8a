package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/test/bench/cli"
)

// mirrorBatch is how many records go to the broker in one produce: a few
// tens of MiB held at a time.
const mirrorBatch = 50_000

// foldBrokers returns the brokers the projector folds the fleet's log
// from. With -kafka apache it starts a real Apache Kafka broker and
// copies the log onto it first: every record of every Drove topic as
// stored (key, value, headers, time), to the same partition in the same
// order, as read committed sees it. The fleet itself runs on the embedded
// broker (its 1,000 executors' clients are more than a one-broker JVM
// here holds); the copy puts the fold, the figure issue 32 holds to COPY,
// on the engine Drove is built on. what says which broker it is; stop
// stops it.
func (w *world) foldBrokers(ctx context.Context) (brokers []string, what string, stop func(), err error) {
	if w.cfg.kafka == cli.KafkaEmbedded {
		return w.brokers, "the fleet's embedded broker (kfake)", func() {}, nil
	}
	began := time.Now()
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: filepath.Join(w.tmp, "apache")})
	if err != nil {
		return nil, "", nil, fmt.Errorf("%w (-kafka embedded folds from kfake)", err)
	}
	stop = func() { _ = c.Stop(10 * time.Second) }
	n, err := mirror(ctx, kafka.Config{Brokers: w.brokers, Logger: w.quiet}, c.Config(), w.cfg.partitions)
	if err != nil {
		stop()
		return nil, "", nil, fmt.Errorf("copying the log onto Apache Kafka: %w", err)
	}
	what = fmt.Sprintf("Apache Kafka %s, a copy of the fleet's log (%d records, copied in %s)",
		apachekafka.Version, n, time.Since(began).Round(time.Millisecond))
	return c.Brokers(), what, stop, nil
}

// mirror copies every Drove topic of from onto to, where it creates them
// with partitions each, and returns the records copied.
func mirror(ctx context.Context, from, to kafka.Config, partitions int) (int, error) {
	if err := kafka.EnsureTopics(ctx, to, partitions, events.Topics()...); err != nil {
		return 0, err
	}
	r, err := kafka.NewReader(ctx, from, kafka.ReadOptions{Topics: events.Topics()})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	var pending []kafka.Raw
	n := 0
	flush := func() error {
		err := kafka.WriteRecords(ctx, to, pending)
		n += len(pending)
		pending = pending[:0]
		return err
	}
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, flush()
		}
		if err != nil {
			return n, err
		}
		pending = append(pending, b.Records...)
		if len(pending) >= mirrorBatch {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
}
