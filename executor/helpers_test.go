package executor_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/test/testenv"
)

// testTimeout bounds every wait; none of these tests sleeps to synchronise.
const testTimeout = 30 * time.Second

const group = "g1"

// world is one test's Kafka with an inventory: nodes n1..n3 in group g1 and
// the instances the test declares.
type world struct {
	t    *testing.T
	ctx  context.Context
	kcfg kafka.Config
	prod *kafka.Producer
}

func newWorld(t *testing.T, instances ...events.InstanceDeclared) *world {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	k, kcfg := testenv.Events(t, ctx)
	prod := k.Producer(t, kcfg, "test-seed")
	w := &world{t: t, ctx: ctx, kcfg: kcfg, prod: prod}
	var inv []events.Envelope
	for _, n := range []string{"n1", "n2", "n3"} {
		inv = append(inv, w.seedEvent(events.NodeAnnounced{Name: n, Group: group, VMCapable: true,
			Total: events.Resources{MemoryMiB: 65536, DiskMiB: 1 << 20, CPUs: 32}}))
	}
	for _, in := range instances {
		inv = append(inv, w.seedEvent(in))
	}
	if err := prod.Append(ctx, events.TopicInventory, inv...); err != nil {
		t.Fatalf("seed inventory: %v", err)
	}
	return w
}

func (w *world) seedEvent(p events.Payload) events.Envelope {
	return events.New(p, events.WithProducer("test"),
		events.WithReason(events.Reason{Actor: "operator:test", Why: "seeding the inventory"}))
}

func instance(name string, storage events.StorageKind, primary, secondary string, memMiB, diskMiB int64) events.InstanceDeclared {
	return events.InstanceDeclared{Name: name, Owner: "acct-1", Storage: storage, RunState: events.RunRunning,
		PrimaryNode: primary, SecondaryNode: secondary,
		Size: events.Size{MemoryMiB: memMiB, VCPUs: 1, DisksMiB: []int64{diskMiB}}}
}

// newSim returns a simulator running 50 times faster than real time.
func newSim(t *testing.T, faults ...sim.Fault) *sim.Driver {
	t.Helper()
	d, err := sim.New(sim.Config{Clock: sim.FastClock(50), Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// running is an executor running in the background.
type running struct {
	ex   *executor.Executor
	stop context.CancelFunc
	done chan error
	once sync.Once
}

func (w *world) start(node string, d executor.Driver, tweak ...func(*executor.Config)) *running {
	w.t.Helper()
	cfg := executor.Config{
		Node: node, Kafka: w.kcfg, ProgressInterval: 20 * time.Millisecond,
		Retry:  executor.Retry{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	ex, err := executor.New(cfg, d)
	if err != nil {
		w.t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	r := &running{ex: ex, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- ex.Run(ctx) }()
	w.t.Cleanup(func() { r.shutdown(w.t) })
	return r
}

// shutdown stops the executor and waits for Run to return nil.
func (r *running) shutdown(t *testing.T) {
	t.Helper()
	r.once.Do(func() {
		r.stop()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(testTimeout):
			t.Errorf("Run did not return after its context ended")
		}
	})
}

// dispatch appends OpcodeDispatched as the planner would, with the
// facts its inventory holds now, and returns it.
func (w *world) dispatch(req string, job, index int, node string, op events.Opcode) events.Envelope {
	w.t.Helper()
	facts := testenv.Facts(w.t, w.ctx, w.kcfg, op.Instance, op.From, op.To)
	env := events.New(events.OpcodeDispatched{Request: req, Job: job, Index: index, Node: node, Opcode: op, Facts: facts},
		events.WithProducer("drove-planner"),
		events.WithReason(events.Reason{Actor: "operator:alice", Why: "evacuate " + node, RequestID: req}))
	w.append(events.TopicOpcodes, env)
	return env
}

func (w *world) append(topic string, envs ...events.Envelope) {
	w.t.Helper()
	if err := w.prod.Append(w.ctx, topic, envs...); err != nil {
		w.t.Fatalf("append to %s: %v", topic, err)
	}
}

func migrate(instance, from, to string) events.Opcode {
	return events.Opcode{OpID: events.OpInstanceMigrate, Instance: instance, From: from, To: to, AllowFailover: true}
}

func replaceDisks(instance, from, to string) events.Opcode {
	return events.Opcode{OpID: events.OpInstanceReplaceDisks, Instance: instance, Mode: events.ModeReplaceNewSecondary,
		RemoteNode: to, From: from, To: to}
}

// read returns every committed event of topic.
func (w *world) read(topic string) []events.Envelope {
	w.t.Helper()
	return testenv.Envelopes(w.t, w.ctx, w.kcfg, topic)
}

// waitFor polls topic until cond holds on its events.
func (w *world) waitFor(topic, what string, cond func([]events.Envelope) bool) []events.Envelope {
	w.t.Helper()
	for {
		evs := w.read(topic)
		if cond(evs) {
			return evs
		}
		select {
		case <-w.ctx.Done():
			w.t.Fatalf("timed out waiting for %s; %s holds %s", what, topic, typesOf(evs))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitEnded waits for the OpcodeEnded of (req, job, index) and returns it.
func (w *world) waitEnded(req string, job, index int) events.OpcodeEnded {
	w.t.Helper()
	var got events.OpcodeEnded
	w.waitFor(events.TopicOpcodes, fmt.Sprintf("opcode %s/%d/%d to end", req, job, index), func(evs []events.Envelope) bool {
		for _, e := range payloads[events.OpcodeEnded](evs) {
			if e.Request == req && e.Job == job && e.Index == index {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

// payloads returns the events of type T, in order.
func payloads[T events.Payload](evs []events.Envelope) []T {
	var out []T
	for _, e := range evs {
		var zero T
		if e.Type != zero.Type() {
			continue
		}
		p, err := events.As[T](e)
		if err != nil {
			panic(err)
		}
		out = append(out, p)
	}
	return out
}

func ofRequest(evs []events.Envelope, req string) []events.Envelope {
	return slices.DeleteFunc(slices.Clone(evs), func(e events.Envelope) bool { return e.CorrelationID != req })
}

func typesOf(evs []events.Envelope) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}
