package service

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// cutter dials brokers until cut; then it drops every connection it made
// and refuses new ones, as a crashed process or a partition would: the
// broker hears no goodbye.
type cutter struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (c *cutter) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, errors.New("cut off the network")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, host)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

func (c *cutter) cutOff() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

// startStandby starts an instance with Standby on, without waiting for it
// to lead.
func (h *harness) startStandby(name string, dial *cutter) *running {
	h.t.Helper()
	kc := h.kc
	kc.TransactionalID = ""
	if dial != nil {
		kc.Dial = dial.dial
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("DROVE_ELECTION_DEBUG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("instance", name)
	}
	svc, err := New(Config{Kafka: kc, Standby: true, ElectionTimeout: time.Second, Producer: name, Logger: log})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	r := &running{svc: svc, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- svc.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func (h *harness) waitReady(r *running, what string) {
	h.t.Helper()
	select {
	case <-r.svc.Ready():
	case err := <-r.done:
		r.done <- err
		h.t.Fatalf("%s ended before leading: %v", what, err)
	case <-h.ctx.Done():
		h.t.Fatalf("%s never led", what)
	}
}

func isReady(r *running) bool {
	select {
	case <-r.svc.Ready():
		return true
	default:
		return false
	}
}

// The active planner is cut off the network in the middle of an
// evacuation (no goodbye, its process as good as dead); the standby takes
// over within a few seconds and finishes it, every opcode dispatched once.
func TestStandbyTakesOverWhenTheLeaderDies(t *testing.T) {
	h := newHarness(t)
	x := h.executor(true, nil)
	var cutA cutter
	a := h.startStandby("planner-a", &cutA)
	h.waitReady(a, "the first instance")
	b := h.startStandby("planner-b", nil)
	evacuate(h, "r1", false, "n1")
	h.waitHeld(x)
	if isReady(b) {
		t.Fatal("the standby leads while the leader is alive")
	}

	cutA.cutOff()
	killed := time.Now()
	h.waitReady(b, "the standby")
	took := time.Since(killed)
	t.Logf("the standby took over %s after the leader was cut off", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("takeover took %s; want a few seconds", took)
	}
	x.release()

	fin := must[events.RequestFinished](t, h.closed("r1"))
	if !sameSet(names(fin.Moved, func(m events.Moved) string { return m.Instance }), allInstances) {
		t.Fatalf("finished with %+v; want every instance moved", fin)
	}
	for k, n := range dispatchCounts(t, h.read(events.TopicOpcodes)) {
		if n != 1 {
			t.Errorf("%+v dispatched %d times", k, n)
		}
	}
	if n := len(h.ofRequest(events.TopicRequests, "r1", events.TypeRequestFinished)); n != 1 {
		t.Errorf("RequestFinished %d times", n)
	}
}

// Two instances running at once: only one decides; when it steps down
// the other takes over, and no decision of the first comes after one of
// the second.
func TestTwoInstancesNeverBothDecide(t *testing.T) {
	h := newHarness(t)
	h.executor(false, nil)
	first := h.startStandby("planner-a", nil)
	h.waitReady(first, "the first instance")
	second := h.startStandby("planner-b", nil)
	stop := make(chan struct{})
	both := make(chan bool, 1)
	go func() { // watch that they never lead at once
		defer close(both)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if first.svc.Leading() && second.svc.Leading() {
				both <- true
				return
			}
		}
	}()
	evacuate(h, "r1", false, "n1")
	h.closed("r1")
	if second.svc.Leading() || isReady(second) {
		t.Fatal("the standby led while the first instance ran")
	}
	first.cancel() // steps down: leaves the group
	h.waitReady(second, "the second instance")
	evacuate(h, "r2", false, "n2")
	h.closed("r2")
	close(stop)
	if <-both {
		t.Error("both instances led at once")
	}

	// Every decision names its producer; one producer's decisions end
	// before the other's begin.
	firstOf, lastOf := map[string]time.Time{}, map[string]time.Time{}
	for _, topic := range []string{events.TopicRequests, events.TopicPlans, events.TopicJobs, events.TopicOpcodes, events.TopicInventory} {
		for _, e := range h.read(topic) {
			p := e.Producer
			if p != "planner-a" && p != "planner-b" {
				continue
			}
			if f, ok := firstOf[p]; !ok || e.Time.Before(f) {
				firstOf[p] = e.Time
			}
			if e.Time.After(lastOf[p]) {
				lastOf[p] = e.Time
			}
		}
	}
	if len(firstOf) != 2 {
		t.Fatalf("decisions by %v; want both instances, one after the other", firstOf)
	}
	if !lastOf["planner-a"].Before(firstOf["planner-b"]) && !lastOf["planner-b"].Before(firstOf["planner-a"]) {
		t.Errorf("decisions interleave: a %s..%s, b %s..%s", firstOf["planner-a"], lastOf["planner-a"],
			firstOf["planner-b"], lastOf["planner-b"])
	}
}
