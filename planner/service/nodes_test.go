package service

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// nodeActionEnd waits for the planner's answer to node command id.
func (h *harness) nodeActionEnd(id string) events.NodeActionEnded {
	h.t.Helper()
	var out events.NodeActionEnded
	h.waitFor("the answer to "+id, func() bool {
		evs := h.ofRequest(events.TopicRequests, id, events.TypeNodeActionEnded)
		if len(evs) > 0 {
			out = must[events.NodeActionEnded](h.t, evs[0])
			return true
		}
		return false
	})
	return out
}

// A node an evacuation is emptying cannot be undrained; once the
// evacuation ended it can, and the node is back in service.
func TestUndrainRefusedWhileEmptiedThenDone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	x := h.executor(true, nil) // opcodes stay running: the evacuation stays active
	h.start()
	evacuate(h, "r1", false, "n1")
	h.waitFor("n1 drained", func() bool { n, _, err := h.node("n1"); return err == nil && n.Drained })

	h.appendEvent(events.NodeActionRequested{Request: "u1", Node: "n1", Action: events.NodeUndrain},
		"operator:alice", "disk swapped", "u1")
	if e := h.nodeActionEnd("u1"); !e.Refused || !strings.Contains(e.Reason, "r1") {
		t.Fatalf("undrain while r1 empties n1: %+v; want refused naming r1", e)
	}
	if n, _, _ := h.node("n1"); !n.Drained {
		t.Fatal("a refused undrain undrained n1")
	}

	x.release() // hold off: the rest runs through
	h.closed("r1")
	h.appendEvent(events.NodeActionRequested{Request: "u2", Node: "n1", Action: events.NodeUndrain},
		"operator:alice", "disk swapped", "u2")
	if e := h.nodeActionEnd("u2"); e.Refused {
		t.Fatalf("undrain after the evacuation: %+v", e)
	}
	n, env, _ := h.node("n1")
	if n.Drained || env.CorrelationID != "u2" || !strings.Contains(env.Reason.Why, "operator:alice: disk swapped") {
		t.Fatalf("n1 after undrain: drained %v, by %q (%q)", n.Drained, env.CorrelationID, env.Reason.Why)
	}
}

// A node whose executor sent heartbeats and then stopped is declared lost
// (offline) once its lease has passed; an operator brings it back.
func TestLeaseExpiryDeclaresNodeLost(t *testing.T) {
	h := newHarness(t)
	h.start(func(c *Config) { c.NodeLease = 300 * time.Millisecond; c.Tick = 50 * time.Millisecond })
	h.appendEvent(events.NodeHeartbeat{Node: "n2", IntervalMS: 100, Sent: time.Now()}, "node:n2", "lease", "")
	h.waitFor("n2 lost", func() bool { n, _, err := h.node("n2"); return err == nil && n.Offline })
	_, env, _ := h.node("n2")
	if !strings.Contains(env.Reason.Why, "lost") {
		t.Fatalf("n2 offline because %q", env.Reason.Why)
	}
	if n, _, _ := h.node("n3"); n.Offline {
		t.Fatal("n3, which never sent a heartbeat, was declared lost")
	}
	h.appendEvent(events.NodeActionRequested{Request: "o1", Node: "n2", Action: events.NodeOnline},
		"operator:alice", "n2 checked", "o1")
	if e := h.nodeActionEnd("o1"); e.Refused {
		t.Fatalf("online: %+v", e)
	}
	// Online renews n2's lease, and with no heartbeat from n2 since, the
	// lease declares it lost again 300 ms later: what online wrote is the
	// record after the first loss, not n2's latest.
	var states []bool // n2's Offline, record by record
	for _, e := range h.read(events.TopicInventory) {
		if p, _ := e.DecodePayload(); e.Type == events.TypeNodeUpdated {
			if u := p.(events.NodeUpdated); u.Name == "n2" {
				states = append(states, u.Offline)
			}
		}
	}
	if i := slices.Index(states, true); i < 0 || !slices.Contains(states[i+1:], false) {
		t.Fatalf("n2's records (offline or not): %v; want online written after its loss", states)
	}
}

// A lease check's key lands in its node's partition of drove.heartbeats
// under Kafka's partitioner, whatever the partition count, and is not the
// node's name (on the compacted topic it would replace its last beat).
func TestLeaseCheckKeysLandInTheNodesPartition(t *testing.T) {
	t.Parallel()
	for _, parts := range []int{1, 3, 24, 97} {
		for i := range 50 {
			node := fmt.Sprintf("node-%d", i)
			k := checkKey(node, parts)
			if k == node || kafka.PartitionOf(events.TopicHeartbeats, k, parts) != kafka.PartitionOf(events.TopicHeartbeats, node, parts) {
				t.Fatalf("%d partitions: %s's check key %q lands in partition %d, the node's is %d", parts, node, k,
					kafka.PartitionOf(events.TopicHeartbeats, k, parts), kafka.PartitionOf(events.TopicHeartbeats, node, parts))
			}
		}
	}
}
