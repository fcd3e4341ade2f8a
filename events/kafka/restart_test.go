package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/events"
	. "github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/events/retry"
)

// appendRetrying appends one event until it is in the log, the way every
// service appends: same event (same id) again while a retry may succeed.
func appendRetrying(ctx context.Context, p *Producer, topic string, e events.Envelope) error {
	return retry.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}.Do(ctx,
		func(err error) bool { return IsRetryable(err) || errors.Is(err, ErrUncertain) },
		func(int) error { return p.Append(ctx, topic, e) }, nil)
}

func restartEvent(req string) events.Envelope {
	return events.New(events.RequestApproved{Request: req}, events.WithProducer("test"),
		events.WithReason(events.Reason{Actor: "operator:test", Why: "testing", RequestID: req}))
}

func await[T any](t *testing.T, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// A broker killed (SIGKILL) and started again under a running producer
// and a following reader loses nothing: every event appended is read, the reader riding out the restart
// with Backoff as the executor does.
func TestBrokerRestartLosesNothing(t *testing.T) {
	const topic, n = "drove.test.restart", 60
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	b, err := apachekafka.Start(ctx, apachekafka.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Kill() })
	cfg := b.Config()
	cfg.ClientID, cfg.TransactionalID, cfg.FetchMaxWait = "drove-test", "test-restart", 100*time.Millisecond
	cfg.Retry = retry.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}
	if err := EnsureTopics(ctx, cfg, 3, topic); err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{topic}, Follow: true, MaxWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	var mu sync.Mutex
	seen := map[string]bool{}
	all := make(chan struct{})
	readErr := make(chan error, 1)
	rctx, stopReading := context.WithCancel(ctx)
	go func() { readErr <- readRetrying(rctx, r, n, &mu, seen, all) }()

	third := make(chan struct{})
	produced := make(chan error, 1)
	want := make([]string, n)
	go func() {
		for i := range n {
			e := restartEvent(fmt.Sprintf("req-%d", i))
			if err := appendRetrying(ctx, p, topic, e); err != nil {
				produced <- fmt.Errorf("append %d: %w", i, err)
				return
			}
			mu.Lock()
			want[i] = e.ID
			mu.Unlock()
			if i == n/3 {
				close(third)
			}
		}
		produced <- nil
	}()
	await(t, ctx, third, "a third of the events appended")
	if err := b.Kill(); err != nil { // SIGKILL: what was not flushed is the broker's to recover
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := await(t, ctx, produced, "every append"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case err := <-readErr:
		t.Fatalf("the reader stopped before reading every event: %v", err)
	case <-ctx.Done():
		t.Fatal("timed out waiting for every event to be read after the restart")
	}
	stopReading()
	if err := await(t, ctx, readErr, "the reader's end"); err != nil {
		t.Fatalf("reader ended with %v; it should ride out the restart", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, id := range want {
		if !seen[id] {
			t.Errorf("event %d (%s) appended but never read", i, id)
		}
	}
}

// readRetrying follows r, riding out the broker's restart with Backoff as
// the executor does, and marks each event it reads in seen, closing all once
// n are seen. It returns nil once ctx ends, or the first error it cannot ride out.
func readRetrying(ctx context.Context, r *Reader, n int, mu *sync.Mutex, seen map[string]bool, all chan struct{}) error {
	retry := retry.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}
	for ctx.Err() == nil {
		var b Batch
		err := retry.Do(ctx, IsRetryable, func(int) error {
			var err error
			b, err = r.Next(ctx)
			return err
		}, nil)
		if ctx.Err() != nil {
			return nil
		}
		recs, derr := b.Decode()
		if err = errors.Join(err, derr); err != nil {
			return err
		}
		mu.Lock()
		for _, rec := range recs {
			seen[rec.Event.ID] = true // readers deduplicate on event id
		}
		if len(seen) == n {
			close(all)
		}
		mu.Unlock()
	}
	return nil
}
