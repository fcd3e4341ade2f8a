package main

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events/kafka"
)

// watcher follows topics from their end when it was made.
type watcher struct{ r *kafka.Reader }

func newWatcher(ctx context.Context, cfg kafka.Config, topics ...string) (*watcher, error) {
	ends, err := kafka.Ends(ctx, cfg, topics...)
	if err != nil {
		return nil, err
	}
	r, err := kafka.NewReader(ctx, cfg, kafka.ReadOptions{Topics: topics, From: ends, Follow: true,
		MaxWait: 250 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	return &watcher{r: r}, nil
}

// waitFor reads until match says true of a record, or timeout.
func (w *watcher) waitFor(ctx context.Context, timeout time.Duration, match func(kafka.Record) bool) (kafka.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		b, err := w.r.Next(ctx)
		if err != nil {
			return kafka.Record{}, fmt.Errorf("within %s: %w", timeout, err)
		}
		recs, err := b.Decode()
		if err != nil {
			return kafka.Record{}, err
		}
		for _, r := range recs {
			if match(r) {
				return r, nil
			}
		}
	}
}

func (w *watcher) close() { w.r.Close() }
