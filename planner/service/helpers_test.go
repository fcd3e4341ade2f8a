package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/jobs"
	"github.com/drovehq/drove/test/testenv"
)

// testTimeout bounds every wait; no test sleeps to synchronise.
const testTimeout = 60 * time.Second

// harness is one test's Kafka with the test cluster seeded into it, and a
// producer speaking for operators.
type harness struct {
	t    *testing.T
	ctx  context.Context
	kc   kafka.Config
	op   *kafka.Producer
	plan *planner.Cluster
}

func newHarness(t *testing.T) *harness { return newHarnessWith(t, testCluster(200)) }

func newHarnessWith(t *testing.T, c *planner.Cluster) *harness {
	t.Helper()
	return newHarnessFor(t, c, testTimeout)
}

// newHarnessFor is newHarnessWith with every wait bounded by d instead.
func newHarnessFor(t *testing.T, c *planner.Cluster, d time.Duration) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	k := testenv.Kafka(t)
	kc := k.Config()
	kc.TransactionalID = "test-operator"
	if err := kafka.EnsureTopics(ctx, kc, 3, events.Topics()...); err != nil {
		t.Fatal(err)
	}
	op, err := kafka.NewProducer(kc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	h := &harness{t: t, ctx: ctx, kc: kc, op: op, plan: c}
	envs := InventoryEvents(h.plan, events.Reason{Actor: "operator:seed", Why: "test cluster"})
	if err := Seed(ctx, op, envs); err != nil {
		t.Fatalf("Seed: %v", err)
	}
	return h
}

// running is a Service under test.
type running struct {
	svc    *Service
	cancel context.CancelFunc
	done   chan error
}

func (h *harness) start(tweak ...func(*Config)) *running {
	h.t.Helper()
	kc := h.kc
	kc.TransactionalID = "" // the service's own
	cfg := Config{Kafka: kc, Logger: slog.New(slog.DiscardHandler)}
	for _, f := range tweak {
		f(&cfg)
	}
	svc, err := New(cfg)
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	r := &running{svc: svc, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- svc.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); <-r.done })
	select {
	case <-svc.Ready():
	case err := <-r.done:
		r.done <- err // for the cleanup
		h.t.Fatalf("Run ended before it was ready: %v", err)
	case <-h.ctx.Done():
		h.t.Fatal("service never became ready")
	}
	return r
}

// appendEvent writes one event as an operator would.
func (h *harness) appendEvent(p events.Payload, actor, why, request string) events.Envelope {
	h.t.Helper()
	env := events.New(p, events.WithProducer("test"),
		events.WithReason(events.Reason{Actor: actor, Why: why, RequestID: request}))
	topic, _ := env.Topic()
	if err := h.op.Append(h.ctx, topic, env); err != nil {
		h.t.Fatalf("append %s: %v", env.Type, err)
	}
	return env
}

func (h *harness) read(topic string) []events.Envelope {
	h.t.Helper()
	return testenv.Envelopes(h.t, h.ctx, h.kc, topic)
}

// ofRequest returns the events of topic for request, of the given types
// (all when none), in log order (one partition per request on the topics
// keyed by request).
func (h *harness) ofRequest(topic, request string, types ...string) []events.Envelope {
	var out []events.Envelope
	for _, e := range h.read(topic) {
		if e.CorrelationID != request {
			continue
		}
		if len(types) == 0 || slices.Contains(types, e.Type) {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls cond until it holds or the test's deadline passes.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	for !cond() {
		select {
		case <-h.ctx.Done():
			h.t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// closed waits for the request's RequestFinished or RequestRejected.
func (h *harness) closed(request string) events.Envelope {
	h.t.Helper()
	var out events.Envelope
	h.waitFor("request "+request+" to close", func() bool {
		evs := h.ofRequest(events.TopicRequests, request, events.TypeRequestFinished, events.TypeRequestRejected)
		if len(evs) > 0 {
			out = evs[0]
			return true
		}
		return false
	})
	return out
}

func must[T events.Payload](t *testing.T, e events.Envelope) T {
	t.Helper()
	v, err := events.As[T](e)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ---- a simulated executor: no executor package exists yet, so the test
// answers dispatched opcodes itself, as DESIGN.md step 3 says executors do.

type opKey struct {
	request    string
	job, index int
}

type simExecutor struct {
	h    *harness
	prod *kafka.Producer

	mu    sync.Mutex
	hold  bool                                 // keep new opcodes running until told
	batch bool                                 // answer a whole fetch in few transactions
	out   []kafka.Message                      // with batch: answers not appended yet
	fail  func(events.OpcodeDispatched) string // non-empty: end with this error
	held  map[opKey]events.Envelope            // running opcodes, by dispatch
	seen  map[opKey]bool
	place map[string][2]string // instance → primary, secondary
}

func (h *harness) executor(hold bool, fail func(events.OpcodeDispatched) string) *simExecutor {
	h.t.Helper()
	kc := h.kc
	kc.TransactionalID = "test-executor"
	prod, err := kafka.NewProducer(kc)
	if err != nil {
		h.t.Fatal(err)
	}
	x := &simExecutor{h: h, prod: prod, hold: hold, fail: fail,
		held: map[opKey]events.Envelope{}, seen: map[opKey]bool{}, place: map[string][2]string{}}
	for _, in := range h.plan.Instances {
		sec := ""
		if in.Secondary != planner.NoNode {
			sec = h.plan.Nodes[in.Secondary].Name
		}
		x.place[in.Name] = [2]string{h.plan.Nodes[in.Primary].Name, sec}
	}
	rd, err := kafka.NewReader(h.ctx, kc, kafka.ReadOptions{Topics: []string{events.TopicOpcodes}, Follow: true,
		MaxWait: 50 * time.Millisecond})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	h.t.Cleanup(func() { cancel(); <-done; rd.Close(); prod.Close() })
	go func() {
		defer close(done)
		for {
			b, err := rd.Next(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil && !kafka.IsRetryable(err) {
				h.t.Errorf("executor: %v", err)
				return
			}
			recs, err := b.Decode()
			if err != nil {
				h.t.Errorf("executor: %v", err)
				return
			}
			for _, r := range recs {
				if err := x.handle(ctx, r.Event); err != nil && ctx.Err() == nil {
					h.t.Errorf("executor: %v", err)
					return
				}
			}
			if err := x.flush(ctx); err != nil && ctx.Err() == nil {
				h.t.Errorf("executor: %v", err)
				return
			}
		}
	}()
	return x
}

func (x *simExecutor) handle(ctx context.Context, env events.Envelope) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch env.Type {
	case events.TypeOpcodeDispatched:
		d, _ := events.As[events.OpcodeDispatched](env)
		k := opKey{d.Request, d.Job, d.Index}
		if x.seen[k] {
			return nil
		}
		x.seen[k] = true
		if err := x.emit(ctx, env, d.Node, events.OpcodeStarted{Request: d.Request, Job: d.Job, Index: d.Index, Node: d.Node}); err != nil {
			return err
		}
		if x.hold {
			x.held[k] = env
			return nil
		}
		return x.end(ctx, env, "")
	case events.TypeOpcodeCancelled:
		c, _ := events.As[events.OpcodeCancelled](env)
		k := opKey{c.Request, c.Job, c.Index}
		if d, ok := x.held[k]; ok {
			delete(x.held, k)
			return x.end(ctx, d, "canceled")
		}
	}
	return nil
}

// release ends every held opcode as it would have ended, and stops holding.
func (x *simExecutor) release() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.hold = false
	for k, d := range x.held {
		delete(x.held, k)
		if err := x.end(x.h.ctx, d, ""); err != nil {
			x.h.t.Fatalf("executor: %v", err)
		}
	}
}

// waitHeld waits until the executor holds every opcode dispatched so
// far, and at least one. The dispatches are read again on each try: the
// job queue may release more moves in later transactions, so a count read
// once can fall behind what the executor holds and never match.
func (h *harness) waitHeld(x *simExecutor) {
	h.t.Helper()
	h.waitFor("the executor to hold every dispatched opcode", func() bool {
		n := len(dispatchCounts(h.t, h.read(events.TopicOpcodes)))
		return n > 0 && x.heldCount() == n
	})
}

func (x *simExecutor) heldCount() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.held)
}

// end appends, in one transaction, how the opcode ended and where its
// instance is now, as DESIGN.md step 3 has executors do.
func (x *simExecutor) end(ctx context.Context, denv events.Envelope, how string) error {
	d, _ := events.As[events.OpcodeDispatched](denv)
	ended := events.OpcodeEnded{Request: d.Request, Job: d.Job, Index: d.Index, Node: d.Node, Status: events.JobSuccess}
	if how == "canceled" {
		ended.Status, ended.Error = events.JobCanceled, "aborted: the request was cancelled"
	} else if x.fail != nil {
		if msg := x.fail(d); msg != "" {
			ended.Status, ended.Error = events.JobError, msg
		}
	}
	msgs := []kafka.Message{x.message(denv, d.Node, ended)}
	if ended.Status == events.JobSuccess {
		op, before := d.Opcode, x.place[d.Opcode.Instance]
		after := before
		switch op.OpID {
		case events.OpInstanceMigrate, events.OpInstanceFailover:
			to := op.To
			if op.TargetNode != "" {
				to = op.TargetNode
			}
			if to == before[1] {
				after[1] = before[0]
			}
			after[0] = to
		case events.OpInstanceReplaceDisks:
			after[1] = op.RemoteNode
		}
		x.place[op.Instance] = after
		msgs = append(msgs, x.message(denv, d.Node, events.InstancePlaced{Instance: op.Instance, Group: x.groupOf(after[0]),
			PrimaryNode: after[0], SecondaryNode: after[1], PreviousGroup: x.groupOf(before[0]),
			PreviousPrimary: before[0], PreviousSecondary: before[1], Request: d.Request}))
	}
	return x.send(ctx, msgs...)
}

// send appends msgs in one transaction, or keeps them for flush (batch).
func (x *simExecutor) send(ctx context.Context, msgs ...kafka.Message) error {
	if x.batch {
		x.out = append(x.out, msgs...)
		return nil
	}
	return x.prod.AppendBatch(ctx, msgs...)
}

// flush appends the answers kept, a thousand events a transaction.
func (x *simExecutor) flush(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for len(x.out) > 0 {
		n := min(len(x.out), 1000)
		if err := x.prod.AppendBatch(ctx, x.out[:n]...); err != nil {
			return err
		}
		x.out = x.out[n:]
	}
	return nil
}

func (x *simExecutor) groupOf(node string) string {
	c := x.h.plan
	return c.Groups[c.Nodes[c.NodeIndex(node)].Group].Name
}

func (x *simExecutor) emit(ctx context.Context, cause events.Envelope, node string, p events.Payload) error {
	return x.send(ctx, x.message(cause, node, p))
}

func (x *simExecutor) message(cause events.Envelope, node string, p events.Payload) kafka.Message {
	env := events.New(p, events.CausedBy(cause), events.WithProducer("executor:"+node),
		events.WithReason(events.Reason{Actor: "node:" + node, Why: "running " + cause.Type, RequestID: cause.CorrelationID}))
	topic, _ := env.Topic()
	return kafka.Message{Topic: topic, Event: env}
}

// ---- checks on the log

// checkSchedule walks a request's job events in log order and checks that
// every job was released only after each of its dependencies ended in an
// accepted status, and that the running limits held throughout.
func checkSchedule(t *testing.T, plan events.PlanComputed, jobEvents []events.Envelope, perNode, total int) {
	t.Helper()
	fate := map[int]events.JobStatus{}
	running := map[int]bool{}
	for _, e := range jobEvents {
		switch e.Type {
		case events.TypeJobReleased:
			rel := must[events.JobReleased](t, e)
			i := rel.Job.Index
			for _, d := range plan.Jobs[i].Depends {
				k := i + d.Job
				st, ok := fate[k]
				if !ok {
					t.Errorf("job %d released before its dependency job %d ended", i, k)
				} else if len(d.Statuses) > 0 && !slices.Contains(statusStrings(d.Statuses), string(st)) {
					t.Errorf("job %d released though job %d ended %s, not %v", i, k, st, d.Statuses)
				}
			}
			running[i] = true
			counts := map[string]int{}
			for j := range running {
				for _, n := range jobs.Senders(&plan.Jobs[j]) {
					counts[n]++
				}
			}
			for n, c := range counts {
				if c > perNode {
					t.Errorf("after releasing job %d, node %s sends %d jobs (limit %d)", i, n, c, perNode)
				}
			}
			if len(running) > total {
				t.Errorf("after releasing job %d, %d jobs run (limit %d)", i, len(running), total)
			}
		case events.TypeJobEnded:
			je := must[events.JobEnded](t, e)
			fate[je.Job] = je.Status
			delete(running, je.Job)
		case events.TypeJobCancelled:
			fate[must[events.JobCancelled](t, e).Job] = events.JobCanceled
		}
	}
}

func statusStrings(ss []events.JobStatus) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// dispatchCounts counts OpcodeDispatched per (request, job, index).
func dispatchCounts(t *testing.T, evs []events.Envelope) map[opKey]int {
	out := map[opKey]int{}
	for _, e := range evs {
		if e.Type == events.TypeOpcodeDispatched {
			d := must[events.OpcodeDispatched](t, e)
			out[opKey{d.Request, d.Job, d.Index}]++
		}
	}
	return out
}

func names[T any](xs []T, name func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return out
}

var errNotFound = errors.New("not found")

// node returns a node's last stated state in the inventory topic.
func (h *harness) node(name string) (events.NodeAnnounced, events.Envelope, error) {
	var out events.NodeAnnounced
	var env events.Envelope
	err := fmt.Errorf("node %s: %w", name, errNotFound)
	for _, e := range h.read(events.TopicInventory) {
		switch e.Type {
		case events.TypeNodeAnnounced, events.TypeNodeUpdated:
			p, _ := e.DecodePayload()
			var n events.NodeAnnounced
			if a, ok := p.(events.NodeAnnounced); ok {
				n = a
			} else {
				n = events.NodeAnnounced(p.(events.NodeUpdated))
			}
			if n.Name == name {
				out, env, err = n, e, nil
			}
		}
	}
	return out, env, err
}
