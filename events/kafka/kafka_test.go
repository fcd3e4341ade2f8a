package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/drovehq/drove/events"
)

const topic = "drove.test"

var errBoom = errors.New("boom")

func TestAppendIsSeenAtomically(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	p := newProducer(t, cfg)
	evs := []events.Envelope{event("r1"), event("r1"), event("r1")}

	// While the transaction is open its records are in the log, but a
	// read-committed reader must see none of them.
	var during []Record
	p.beforeCommit = func(ctx context.Context) error {
		if got := readUncommitted(t, ctx, cfg, topic, 3); len(got) != 3 {
			t.Errorf("the open transaction holds %d records, want 3", len(got))
		}
		var err error
		during, err = ReadAll(ctx, cfg, topic)
		return err
	}
	if err := p.Append(ctx, topic, evs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if len(during) != 0 {
		t.Fatalf("a read-committed reader saw %d records of an open transaction", len(during))
	}
	after, err := ReadAll(ctx, cfg, topic)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	equalIDs(t, "after commit", ids(after), envIDs(evs...))
}

func TestAbortedAppendIsNeverSeen(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	p := newProducer(t, cfg)

	p.beforeCommit = func(context.Context) error { return errBoom }
	err := p.Append(ctx, topic, event("aborted"), event("aborted"))
	if !errors.Is(err, ErrAborted) || !errors.Is(err, errBoom) {
		t.Fatalf("Append = %v, want ErrAborted wrapping the cause", err)
	}
	if !IsRetryable(err) {
		t.Fatalf("an aborted append should be retryable")
	}
	p.beforeCommit = nil
	committed := event("committed")
	if err := p.Append(ctx, topic, committed); err != nil {
		t.Fatalf("Append after abort: %v", err)
	}
	// The aborted records really are in the log, before the committed one.
	if got := readUncommitted(t, ctx, cfg, topic, 3); len(got) != 3 {
		t.Fatalf("log holds %d data records, want 3", len(got))
	}

	all, err := ReadAll(ctx, cfg, topic)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	equalIDs(t, "ReadAll", ids(all), envIDs(committed))

	// A following reader reads the partition in order, so had it seen the
	// aborted records they would have come before the committed one.
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{topic}, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen, _ := readUntil(t, ctx, r, 1)
	equalIDs(t, "following reader", ids(seen), envIDs(committed))
}

func TestReadAllReturnsEveryEventInOrder(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic, "drove.empty")
	p := newProducer(t, cfg)

	var want []events.Envelope
	for _, batch := range [][]events.Envelope{
		{event("r1")},
		{event("r2"), event("r3")},
		{event("r4"), event("r5"), event("r6")},
	} {
		if err := p.Append(ctx, topic, batch...); err != nil {
			t.Fatalf("Append: %v", err)
		}
		want = append(want, batch...)
	}
	// An aborted append at the tail ends the log in an abort marker.
	p.beforeCommit = func(context.Context) error { return errBoom }
	if err := p.Append(ctx, topic, event("r7")); !errors.Is(err, ErrAborted) {
		t.Fatalf("Append = %v, want ErrAborted", err)
	}

	got, err := ReadAll(ctx, cfg, topic)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	equalIDs(t, "ReadAll", ids(got), envIDs(want...))
	if got[0].Offset != 0 {
		t.Fatalf("first offset %d, want 0", got[0].Offset)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Offset <= got[i-1].Offset {
			t.Fatalf("offsets out of order: %v then %v", got[i-1], got[i])
		}
	}
	for _, r := range got {
		if r.Topic != topic || r.Event.Type != events.TypeRequestApproved {
			t.Fatalf("record %v: topic %q type %q", r, r.Topic, r.Event.Type)
		}
	}

	if empty, err := ReadAll(ctx, cfg, "drove.empty"); err != nil || len(empty) != 0 {
		t.Fatalf("ReadAll(empty) = %v, %v", empty, err)
	}
	if _, err := ReadAll(ctx, cfg, "drove.missing"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("ReadAll(missing) = %v, want ErrUnknownTopic", err)
	}
}

func TestReadAllAcrossPartitions(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 4, topic)
	p := newProducer(t, cfg)
	var msgs []Message
	wantByKey := map[string][]string{}
	for i := range 40 {
		e := event([]string{"r-a", "r-b", "r-c", "r-d", "r-e"}[i%5])
		msgs = append(msgs, Message{Topic: topic, Event: e})
		wantByKey[e.Key] = append(wantByKey[e.Key], e.ID)
	}
	if err := p.AppendBatch(ctx, msgs...); err != nil {
		t.Fatalf("AppendBatch: %v", err)
	}
	got, err := ReadAll(ctx, cfg, topic)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("ReadAll returned %d records, want %d", len(got), len(msgs))
	}
	gotByKey := map[string][]string{}
	for i, r := range got {
		if i > 0 && (r.Partition < got[i-1].Partition ||
			r.Partition == got[i-1].Partition && r.Offset <= got[i-1].Offset) {
			t.Fatalf("not ordered by partition then offset: %v then %v", got[i-1], r)
		}
		gotByKey[r.Event.Key] = append(gotByKey[r.Event.Key], r.Event.ID)
	}
	for k, want := range wantByKey {
		equalIDs(t, "events of key "+k, gotByKey[k], want)
	}
}

func TestUndecodableRecordStops(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	raw, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	future := []byte(`{"id":"x","type":"node.exploded","version":1,"time":"2025-01-01T00:00:00Z",` +
		`"key":"n","producer":"p","reason":{"actor":"a","why":"w"},"payload":{}}`)
	if err := raw.ProduceSync(ctx, &kgo.Record{Topic: cfg.wire(topic), Value: future}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if _, err := ReadAll(ctx, cfg, topic); !errors.Is(err, ErrUndecodable) || !errors.Is(err, events.ErrUnknownType) {
		t.Fatalf("ReadAll = %v, want ErrUndecodable wrapping events.ErrUnknownType", err)
	}
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{topic}, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := r.Next(ctx)
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("Next = %d raw records, %v; want the one in the log", len(b.Records), err)
	}
	if _, err := b.Decode(); !errors.Is(err, ErrUndecodable) {
		t.Fatalf("Decode = %v, want ErrUndecodable", err)
	}
}

func TestAppendRefusesInvalidEventsBeforeWriting(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	p := newProducer(t, cfg)
	bad := events.New(events.RequestApproved{Request: "r1"}) // no producer, no reason
	err := p.Append(ctx, topic, event("r1"), bad)
	if !errors.Is(err, events.ErrMalformed) || !strings.Contains(err.Error(), "event 1") {
		t.Fatalf("Append = %v, want events.ErrMalformed naming event 1", err)
	}
	if err := p.AppendBatch(ctx, Message{Event: event("r1")}); err == nil || !strings.Contains(err.Error(), "topic missing") {
		t.Fatalf("AppendBatch without topic = %v", err)
	}
	if got, err := ReadAll(ctx, cfg, topic); err != nil || len(got) != 0 {
		t.Fatalf("ReadAll = %d records, %v; want none written", len(got), err)
	}
}

func TestSecondProducerFencesTheFirst(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	old := newProducer(t, cfg)
	if err := old.Append(ctx, topic, event("r1")); err != nil {
		t.Fatalf("Append: %v", err)
	}
	successor := newProducer(t, cfg) // same TransactionalID: a restart
	if err := successor.Append(ctx, topic, event("r2")); err != nil {
		t.Fatalf("successor Append: %v", err)
	}
	err := old.Append(ctx, topic, event("r3"))
	if !errors.Is(err, ErrFenced) || IsRetryable(err) {
		t.Fatalf("the fenced producer's Append = %v, want a non-retryable ErrFenced", err)
	}
	got, err := ReadAll(ctx, cfg, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("ReadAll = %d records, want the 2 committed ones", len(got))
	}
}

// A producer whose transactional id is its own (Config.SoleOwner) can be
// fenced only by a client it abandoned; it starts a new client and the
// append goes through. (Here another producer plays the late client.)
func TestSoleOwnerStartsAfreshWhenFenced(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	cfg.SoleOwner = true
	p := newProducer(t, cfg)
	if err := p.Append(ctx, topic, event("r1")); err != nil {
		t.Fatalf("Append: %v", err)
	}
	late := newProducer(t, cfg)
	if err := late.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Append(ctx, topic, event("r2")); err != nil {
		t.Fatalf("Append after the fence = %v, want it through on a new client", err)
	}
	got, err := ReadAll(ctx, cfg, topic)
	if err != nil || len(got) != 2 || got[1].Event.Key != "r2" {
		t.Fatalf("ReadAll = %v, %v; want r1 and r2", got, err)
	}
}

// An append waits for the broker's producer id within its own context:
// franz-go's BeginTransaction asks for the id with none, so an executor
// told to stop while the broker gave no id could not (1,499 of 1,500 in an
// overloaded fleet had not stopped a minute later).
//
// kfake: it holds the InitProducerID request unanswered (ControlKey), a
// fault no real broker can be made to produce on demand.
func TestAppendHonoursItsContextWhileTheProducerIDIsAwaited(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close) // wakes the held request
	asked := make(chan struct{}, 1)
	c.ControlKey(kmsg.InitProducerID.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case asked <- struct{}{}:
		default:
		}
		c.SleepControl(func() { <-t.Context().Done() }) // no answer while the test runs
		return nil, errors.New("closing"), true
	})
	p := newProducer(t, Config{Brokers: c.ListenAddrs(), ClientID: "drove-test", TransactionalID: "test-held"})
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- p.Append(ctx, topic, event("r1")) }()
	select {
	case <-asked:
	case <-time.After(testTimeout):
		t.Fatal("the producer never asked for its id")
	}
	cancel() // the append's caller gives up, as a stopping executor does
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Append = %v, want the caller's context.Canceled", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Append did not return after its context ended: it waits for the producer id with none")
	}
}

func TestEnsureTopics(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 0)
	if err := EnsureTopics(ctx, cfg, 3, events.Topics()...); err != nil {
		t.Fatalf("EnsureTopics: %v", err)
	}
	if err := EnsureTopics(ctx, cfg, 3, events.Topics()...); err != nil {
		t.Fatalf("EnsureTopics again: %v", err)
	}
	for _, tp := range events.Topics() {
		r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{tp}})
		if err != nil {
			t.Fatalf("%s: %v", tp, err)
		}
		b := r.Ends()
		r.Close()
		if len(b) != 3 {
			t.Fatalf("%s: %d partitions, %v; want 3", tp, len(b), err)
		}
	}
	if err := EnsureTopics(ctx, cfg, 0, "x"); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("EnsureTopics(0 partitions) = %v", err)
	}
}

func TestFollowingReaderStopsCleanlyOnCancel(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{topic}, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := r.Next(cctx) // nothing to read: it waits
		done <- err
	}()
	cancel()
	if err := wait(t, ctx, done, "Next"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel = %v, want context.Canceled", err)
	}
}

// A transaction coordinator that answers a commit with INVALID_TXN_STATE (as one cut off from its peers did in
// test/partition) leaves franz-go's client refusing every later
// transaction; the producer starts a new client, so the next append
// lands instead of failing until the process restarts.
func TestAppendAfterAnUnusableTransactionStateLands(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	c.ControlKey(kmsg.EndTxn.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		resp := r.(*kmsg.EndTxnRequest).ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp, nil, true
	})
	cfg := Config{Brokers: c.ListenAddrs(), ClientID: "drove-test", TransactionalID: "test-invalid-state"}
	p := newProducer(t, cfg)
	ctx := testContext(t)
	if err := p.Append(ctx, topic, event("refused")); !errors.Is(err, ErrUncertain) {
		t.Fatalf("Append with the commit refused = %v, want ErrUncertain", err)
	}
	if err := p.Append(ctx, topic, event("landed")); err != nil {
		t.Fatalf("the next Append = %v, want it to land", err)
	}
	got, err := ReadAll(ctx, cfg, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Event.CorrelationID != "landed" {
		t.Fatalf("read %v, want the landed event only", ids(got))
	}
}
