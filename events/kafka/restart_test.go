package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/retry"
)

// restartableBroker is a kfake cluster persisted in a directory on a fixed
// port, so that it can be stopped and started again as a restarted broker.
type restartableBroker struct {
	t    *testing.T
	dir  string
	port int
	c    *kfake.Cluster
}

func newRestartableBroker(t *testing.T) *restartableBroker {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	b := &restartableBroker{t: t, dir: t.TempDir(), port: port}
	b.start()
	t.Cleanup(func() { b.c.Close() })
	return b
}

func (b *restartableBroker) start() {
	b.t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(b.port), kfake.DataDir(b.dir),
		kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3))
	if err != nil {
		b.t.Fatalf("kfake on port %d: %v", b.port, err)
	}
	b.c = c
}

// restart stops the broker (its clients' connections drop) and starts it
// again on the same directory and port.
func (b *restartableBroker) restart() {
	b.c.Close()
	b.start()
}

func (b *restartableBroker) config(t *testing.T) Config {
	return Config{Brokers: []string{fmt.Sprintf("127.0.0.1:%d", b.port)}, ClientID: "drove-test",
		TransactionalID: "test-" + t.Name(), FetchMaxWait: 100 * time.Millisecond,
		Retry: retry.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}}
}

// appendRetrying appends one event until it is in the log, the way every
// service appends: same event (same id) again while a retry may succeed.
func appendRetrying(ctx context.Context, p *Producer, topic string, e events.Envelope) error {
	return retry.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}.Do(ctx,
		func(err error) bool { return IsRetryable(err) || errors.Is(err, ErrUncertain) },
		func(int) error { return p.Append(ctx, topic, e) }, nil)
}

// A broker restart under a running producer and a following reader loses
// nothing: every event appended is read, the reader riding out the restart
// with Backoff as the executor does.
func TestBrokerRestartLosesNothing(t *testing.T) {
	const topic, n = "drove.test.restart", 60
	b := newRestartableBroker(t)
	cfg := b.config(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if err := EnsureTopics(ctx, cfg, 3, topic); err != nil {
		t.Fatal(err)
	}
	p := newProducer(t, cfg)
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
	go func() {
		policy := retry.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}
		for rctx.Err() == nil {
			var b Batch
			err := policy.Do(rctx, IsRetryable, func(int) error {
				var err error
				b, err = r.Next(rctx)
				return err
			}, nil)
			if rctx.Err() != nil {
				readErr <- nil
				return
			}
			recs, derr := b.Decode()
			if err = errors.Join(err, derr); err != nil {
				readErr <- err
				return
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
		readErr <- nil
	}()

	third := make(chan struct{})
	produced := make(chan error, 1)
	want := make([]string, n)
	go func() {
		for i := range n {
			e := event(fmt.Sprintf("req-%d", i))
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
	wait(t, ctx, third, "a third of the events appended")
	b.restart()
	if err := wait(t, ctx, produced, "every append"); err != nil {
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
	if err := wait(t, ctx, readErr, "the reader's end"); err != nil {
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
