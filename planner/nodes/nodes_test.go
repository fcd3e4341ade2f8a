package nodes_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
	"github.com/drovehq/drove/planner/nodes"
)

// world is a fold of two nodes with a settable clock, deciding as the
// service does: every decision applied to the inventory and the fold.
type world struct {
	t        *testing.T
	now      time.Time
	inv      *inventory.Inventory
	st       *nodes.State
	emptying map[string]string
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), inv: inventory.New(), emptying: map[string]string{}}
	w.st = nodes.NewState(func() time.Time { return w.now })
	for _, n := range []string{"n1", "n2"} {
		w.apply(events.New(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true,
			Total: events.Resources{MemoryMiB: 1024, DiskMiB: 1024, CPUs: 4}}))
	}
	return w
}

func (w *world) apply(env events.Envelope) {
	p, err := env.DecodePayload()
	if err != nil {
		w.t.Fatal(err)
	}
	if !w.st.Apply(env, p, inventory.Unread(env)) {
		w.inv.Apply(p, inventory.Unread(env))
	}
}

func (w *world) decide(lease time.Duration) []events.Envelope {
	env := nodes.Env{Inv: w.inv, Lease: lease, Producer: "planner",
		CheckKey: func(n string) string { return n + "/lease-check/0" },
		Emptying: func(n string) string { return w.emptying[n] },
		Apply: func(e events.Envelope, p events.Payload) {
			if !w.st.Apply(e, p, inventory.Unread(e)) {
				w.inv.Apply(p, inventory.Unread(e))
			}
		}}
	return nodes.Decide(env, w.st)
}

func (w *world) ask(id, node string, a events.NodeAction) {
	w.apply(events.New(events.NodeActionRequested{Request: id, Node: node, Action: a},
		events.WithReason(events.Reason{Actor: "operator:alice", Why: "maintenance over", RequestID: id})))
}

func ended(t *testing.T, evs []events.Envelope) events.NodeActionEnded {
	t.Helper()
	last := evs[len(evs)-1]
	e, err := events.As[events.NodeActionEnded](last)
	if err != nil {
		t.Fatalf("last decision %s, want node.action_ended", last.Type)
	}
	return e
}

func TestUndrainRefusedWhileEmptied(t *testing.T) {
	w := newWorld(t)
	n := w.inv.NodeState("n1")
	n.Drained = true
	w.apply(events.New(n))
	w.emptying["n1"] = "req-evac"

	w.ask("u1", "n1", events.NodeUndrain)
	evs := w.decide(0)
	if e := ended(t, evs); len(evs) != 1 || !e.Refused || e.Request != "u1" {
		t.Fatalf("undrain while emptied: %d events, %+v", len(evs), e)
	}
	if !w.inv.Nodes["n1"].Drained {
		t.Fatal("refused undrain changed the node")
	}
	if evs := w.decide(0); len(evs) != 0 {
		t.Fatalf("an answered command answered again: %d events", len(evs))
	}

	delete(w.emptying, "n1")
	w.ask("u2", "n1", events.NodeUndrain)
	evs = w.decide(0)
	if e := ended(t, evs); len(evs) != 2 || e.Refused || w.inv.Nodes["n1"].Drained {
		t.Fatalf("undrain: %d events, %+v, drained %v", len(evs), e, w.inv.Nodes["n1"].Drained)
	}
	// The reason trail carries the operator's word and the request id.
	if evs[0].CorrelationID != "u2" || evs[0].CausationID == "" ||
		evs[0].Reason.Actor != "planner" || !strings.Contains(evs[0].Reason.Why, "operator:alice: maintenance over") {
		t.Fatalf("trail %+v", evs[0])
	}
	w.ask("u3", "nope", events.NodeUndrain)
	if e := ended(t, w.decide(0)); !e.Refused {
		t.Fatal("unknown node not refused")
	}
}

func TestLeaseLostThenOnline(t *testing.T) {
	w := newWorld(t)
	w.apply(events.New(events.NodeHeartbeat{Node: "n1", IntervalMS: 1000, Sent: w.now}))
	lease := 10 * time.Second
	w.now = w.now.Add(9 * time.Second)
	if evs := w.decide(lease); len(evs) != 0 {
		t.Fatalf("lease not expired, yet %d events", len(evs))
	}
	w.now = w.now.Add(2 * time.Second)
	w.lapse(lease, "n1")
	evs := w.decide(lease)
	if len(evs) != 1 || !w.inv.Nodes["n1"].Offline || w.inv.Nodes["n2"].Offline {
		t.Fatalf("after the lease: %d events; n1 offline %v, n2 (never beat) offline %v",
			len(evs), w.inv.Nodes["n1"].Offline, w.inv.Nodes["n2"].Offline)
	}
	if evs := w.decide(lease); len(evs) != 0 {
		t.Fatal("a lost node declared lost twice")
	}
	// Heartbeats alone do not bring it back; an operator does, and the
	// lease starts afresh.
	w.apply(events.New(events.NodeHeartbeat{Node: "n1", IntervalMS: 1000, Sent: w.now}))
	w.decide(lease)
	if !w.inv.Nodes["n1"].Offline {
		t.Fatal("a heartbeat brought a lost node back without an operator")
	}
	w.now = w.now.Add(time.Hour)
	w.ask("o1", "n1", events.NodeOnline)
	evs = w.decide(lease)
	if e := ended(t, evs); e.Refused || w.inv.Nodes["n1"].Offline || len(evs) != 2 {
		t.Fatalf("online: %+v, offline %v, %d events", e, w.inv.Nodes["n1"].Offline, len(evs))
	}
	w.now = w.now.Add(5 * time.Second)
	if evs := w.decide(lease); len(evs) != 0 {
		t.Fatal("brought online, then lost at once")
	}
	w.now = w.now.Add(lease + time.Second) // online, it must renew the lease as any node
	w.lapse(lease, "n1")
	if evs := w.decide(lease); len(evs) != 1 || !w.inv.Nodes["n1"].Offline {
		t.Fatal("brought online and silent, it was not lost again")
	}
	w.ask("f1", "n2", events.NodeOffline)
	w.decide(lease)
	if !w.inv.Nodes["n2"].Offline {
		t.Fatal("offline not applied")
	}
}

// lapse takes the pass that finds node's lease lapsed: it appends a lease
// check and declares nothing yet; the check is then read back.
func (w *world) lapse(lease time.Duration, node string) {
	w.t.Helper()
	evs := w.decide(lease)
	if len(evs) != 1 || evs[0].Type != events.TypeLeaseCheck || w.inv.Nodes[node].Offline {
		w.t.Fatalf("the lapse of %s: decided %d events (%v), offline %v; want one lease check, nothing declared",
			node, len(evs), evs, w.inv.Nodes[node].Offline)
	}
	if c, _ := events.As[events.LeaseCheck](evs[0]); c.Node != node || c.Key == node || events.KeyOf(c) != c.Key {
		w.t.Fatalf("check %+v", c)
	}
	if again := w.decide(lease); len(again) != 0 {
		w.t.Fatalf("before the check is read back: %d events; the service's own copy of it proves nothing", len(again))
	}
	w.apply(evs[0]) // read back from the log
}

// A lapse is declared only from a read proven current: a heartbeat read
// after the check was appended (the service's read lagged behind the
// node's appends) keeps the node, and a check never read back (its append
// lost, or the read stuck on a broker cut off from its peers) declares
// nothing and is appended again after half a lease.
func TestLapseDeclaredOnlyOnceItsCheckIsReadBack(t *testing.T) {
	w := newWorld(t)
	lease := 10 * time.Second
	w.apply(events.New(events.NodeHeartbeat{Node: "n1", IntervalMS: 1000, Sent: w.now}))
	w.now = w.now.Add(11 * time.Second)
	evs := w.decide(lease)
	if len(evs) != 1 || evs[0].Type != events.TypeLeaseCheck {
		t.Fatalf("lapsed: %d events; want one lease check", len(evs))
	}
	// The lagging read catches up: the node's heartbeats come before
	// the check in its partition.
	w.apply(events.New(events.NodeHeartbeat{Node: "n1", IntervalMS: 1000, Sent: w.now}))
	w.apply(evs[0])
	w.now = w.now.Add(time.Second)
	if evs := w.decide(lease); len(evs) != 0 || w.inv.Nodes["n1"].Offline {
		t.Fatalf("a heartbeat read before the check, yet %d events, offline %v", len(evs), w.inv.Nodes["n1"].Offline)
	}

	w.now = w.now.Add(lease + time.Second)
	evs = w.decide(lease)
	if len(evs) != 1 || evs[0].Type != events.TypeLeaseCheck {
		t.Fatalf("lapsed again: %d events; want a new check (the old one was before the last heartbeat)", len(evs))
	}
	w.now = w.now.Add(lease / 2)
	if evs := w.decide(lease); len(evs) != 0 {
		t.Fatalf("within half a lease of the check: %d events", len(evs))
	}
	w.now = w.now.Add(time.Second)
	again := w.decide(lease)
	if len(again) != 1 || again[0].Type != events.TypeLeaseCheck || again[0].ID == evs[0].ID || w.inv.Nodes["n1"].Offline {
		t.Fatalf("a check not read back for half a lease: %d events, offline %v; want a new check", len(again), w.inv.Nodes["n1"].Offline)
	}
	w.apply(evs[0]) // the first check, read at last, is superseded
	if evs := w.decide(lease); len(evs) != 0 {
		t.Fatalf("a superseded check read back declared %d events", len(evs))
	}
	w.apply(again[0])
	if evs := w.decide(lease); len(evs) != 1 || !w.inv.Nodes["n1"].Offline ||
		!strings.Contains(evs[0].Reason.Why, "before the planner's check") {
		t.Fatalf("the latest check read back: %d events, offline %v", len(evs), w.inv.Nodes["n1"].Offline)
	}
}

// A check says where the read of the node's heartbeats stood (past the
// last one read), so that the log alone decides it: the node's executor
// reads the same records to learn whether the planner gave up on it.
func TestCheckSaysWhereTheReadStood(t *testing.T) {
	w := newWorld(t)
	lease := 10 * time.Second
	for _, off := range []int64{7, 12} {
		hb := events.NodeHeartbeat{Node: "n1", IntervalMS: 1000, Sent: w.now}
		if !w.st.Apply(events.New(hb), hb, inventory.Pos{Time: w.now, Offset: off}) {
			t.Fatal("a heartbeat is the fold's own")
		}
	}
	w.now = w.now.Add(11 * time.Second)
	evs := w.decide(lease)
	c, err := events.As[events.LeaseCheck](evs[0])
	if err != nil || c.Read != 13 {
		t.Fatalf("check %+v (%v); want read 13, past the heartbeat at offset 12", c, err)
	}
}
