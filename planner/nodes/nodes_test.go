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
	if !w.st.Apply(env, p) {
		w.inv.Apply(p, inventory.Unread(env))
	}
}

func (w *world) decide(lease time.Duration) []events.Envelope {
	env := nodes.Env{Inv: w.inv, Lease: lease, Producer: "planner",
		Emptying: func(n string) string { return w.emptying[n] },
		Apply: func(e events.Envelope, p events.Payload) {
			if !w.st.Apply(e, p) {
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
	w.ask("f1", "n2", events.NodeOffline)
	w.decide(lease)
	if !w.inv.Nodes["n2"].Offline {
		t.Fatal("offline not applied")
	}
}
