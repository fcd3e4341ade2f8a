package executor

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/test/testenv"
)

// regainWorld is a log shared by the cases of TestRegainReadsThePlannersCheck:
// each case is a node of its own, its heartbeats and the planner's lease
// checks in its partition of drove.heartbeats, as the executor and the
// planner service append them.
type regainWorld struct {
	t    *testing.T
	ctx  context.Context
	k    *testenv.KafkaCluster
	cfg  kafka.Config
	prod *kafka.Producer
}

// append appends p to topic and returns where it landed.
func (w *regainWorld) append(topic string, p events.Payload) kafka.Record {
	w.t.Helper()
	env := events.New(p, events.WithProducer("test"), events.WithReason(events.Reason{Actor: "test", Why: "regain"}))
	if err := w.prod.Append(w.ctx, topic, env); err != nil {
		w.t.Fatal(err)
	}
	recs, err := kafka.ReadAll(w.ctx, w.cfg, topic)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, r := range recs {
		if r.Event.ID == env.ID {
			return r
		}
	}
	w.t.Fatalf("%s not read back", env.ID)
	return kafka.Record{}
}

func (w *regainWorld) beat(node string) kafka.Record {
	return w.append(events.TopicHeartbeats, events.NodeHeartbeat{Node: node, IntervalMS: 1000, Sent: time.Now()})
}

// check appends the planner's lease check of node, its read standing at
// read, under a key that lands in the node's partition.
func (w *regainWorld) check(node string, read int64) events.LeaseCheck {
	key := node
	for i := 0; key == node || kafka.PartitionOf(events.TopicHeartbeats, key, 3) != kafka.PartitionOf(events.TopicHeartbeats, node, 3); i++ {
		key = node + "/lease-check/" + strconv.Itoa(i)
	}
	c := events.LeaseCheck{Node: node, Key: key, Sent: time.Now(), Read: read}
	w.append(events.TopicHeartbeats, c)
	return c
}

// executor is node's executor, its fence fence, whose lease fell after a
// renewal at since; the heartbeat it appended last landed, and its proof
// is under way.
func (w *regainWorld) executor(node string, since time.Time, fence time.Duration) *Executor {
	w.t.Helper()
	l := &Lease{}
	l.renewed(since)
	if !l.lapsed(since.Add(time.Hour), time.Second) {
		w.t.Fatal("the fence did not fall")
	}
	if _, prove := l.renewed(time.Now()); !prove {
		w.t.Fatal("no proof asked for")
	}
	cfg := w.cfg
	cfg.TransactionalID = w.k.Topic("executor-" + node)
	e, err := New(Config{Node: node, Kafka: cfg, Heartbeat: time.Second, Fence: fence, Lease: l,
		Logger: slog.New(slog.DiscardHandler), PlainTransfer: true}, driverFunc(func() { w.t.Error("the driver ran") }))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(e.prod.Close)
	return e
}

// After a fall, the first heartbeat that lands brings the lease back only
// when the node's partition shows the planner did not give up on it: a
// lease check before that heartbeat with no heartbeat of the node after
// the read it names declares the node lost, and the executor then waits
// for the planner's word (the node offline, stamped after the check) and
// takes only what is dispatched after it. test/partition saw a begin
// phase run on a node the planner declared lost 0.4 s before it ended.
func TestRegainReadsThePlannersCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	k, kcfg := testenv.Events(t, ctx)
	w := &regainWorld{t: t, ctx: ctx, k: k, cfg: kcfg}
	w.prod = k.Producer(t, kcfg, "regain")

	// Logs the planner keeps the node on: each lays out the node's
	// partition and returns the heartbeat that landed after the fall.
	for _, c := range []struct {
		name, node string
		log        func(node string) kafka.Record
	}{
		{"no check", "n1", func(n string) kafka.Record { w.beat(n); return w.beat(n) }},
		{"a check the heartbeats before it answer", "n2", func(n string) kafka.Record {
			h0 := w.beat(n)
			w.check(n, h0.Offset) // the planner had not read h0 yet
			return w.beat(n)
		}},
		{"a check after the heartbeat", "n3", func(n string) kafka.Record {
			w.beat(n)
			h1 := w.beat(n)
			w.check(n, h1.Offset+1) // the planner reads h1 first
			return h1
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			since := time.Now()
			h1 := c.log(c.node)
			at := h1.Event.Time
			e := w.executor(c.node, since, time.Minute)
			e.regain(ctx, since, at, h1.Event.ID)
			if !e.lease.admits(at) || e.lease.admits(at.Add(-time.Millisecond)) {
				t.Fatal("not regained from the heartbeat's start")
			}
		})
	}
	t.Run("a heartbeat not yet visible when the proof reads", func(t *testing.T) {
		// Committed, its transaction's marker not yet written: the proof
		// follows the partition until it reads it (the chaos test saw a
		// read that stopped at the end it had keep the lease down).
		since := time.Now()
		w.beat("n6")
		hb := events.NodeHeartbeat{Node: "n6", IntervalMS: 1000, Sent: time.Now()}
		env := events.New(hb, events.WithProducer("test"), events.WithReason(events.Reason{Actor: "test", Why: "regain"}))
		e := w.executor("n6", since, time.Minute)
		done := make(chan struct{})
		go func() { defer close(done); e.regain(ctx, since, env.Time, env.ID) }()
		if err := w.prod.Append(ctx, events.TopicHeartbeats, env); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("the proof did not end on the heartbeat appended after it began")
		}
		if !e.lease.admits(env.Time) {
			t.Fatal("not regained from the heartbeat's start")
		}
	})
	t.Run("a check that declares the node lost", func(t *testing.T) {
		since := time.Now()
		h0 := w.beat("n4")
		c := w.check("n4", h0.Offset+1)
		h1, at := w.beat("n4"), time.Now()
		e := w.executor("n4", since, time.Minute)
		done := make(chan struct{})
		go func() { defer close(done); e.regain(ctx, since, at, h1.Event.ID) }()
		node := events.NodeUpdated{Name: "n4", Group: "g1", VMCapable: true,
			Total: events.Resources{MemoryMiB: 1024, DiskMiB: 1024, CPUs: 4}}
		w.append(events.TopicInventory, node) // online: not the planner's word
		if e.lease.admits(time.Now()) {
			t.Fatal("regained although the check declares the node lost")
		}
		node.Offline = true
		lost := w.append(events.TopicInventory, node)
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("the proof did not end on the planner's word")
		}
		if e.lease.admits(lost.Event.Time.Add(-time.Millisecond)) || e.lease.admits(at) || !e.lease.admits(lost.Event.Time) {
			t.Fatalf("regained from %v; want from the loss, %s (the check was sent %s)", e.lease.regained, lost.Event.Time, c.Sent)
		}
		if ok, _ := e.lease.valid(time.Now(), time.Hour); !ok {
			t.Fatal("the lease does not hold once the loss is read")
		}
	})
	t.Run("a check the planner never judges", func(t *testing.T) {
		// Resent, or forgotten by a restarted planner: no loss follows.
		// Past a fence the lease is back, for what comes from then on.
		since := time.Now()
		h0 := w.beat("n5")
		w.check("n5", h0.Offset+1)
		h1, at := w.beat("n5"), time.Now()
		fence := 300 * time.Millisecond
		e := w.executor("n5", since, fence)
		began := time.Now()
		e.regain(ctx, since, at, h1.Event.ID)
		if waited := time.Since(began); waited < fence {
			t.Fatalf("regained after %s, within the fence: the loss was not waited for", waited)
		}
		if e.lease.admits(began.Add(fence-time.Millisecond)) || !e.lease.admits(time.Now()) {
			t.Fatalf("regained from %v; want from the wait's end, a fence after %s", e.lease.regained, began)
		}
	})
}
