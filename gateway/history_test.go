package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/gateway"
)

// historyEntry is what the tests read of a history line.
type historyEntry struct {
	Seq     int64  `json:"seq"`
	Type    string `json:"type"`
	Summary string `json:"summary"`
	From    string `json:"state_before"`
	To      string `json:"state_after"`
	Before  *struct {
		Primary string `json:"primary"`
	} `json:"placement_before"`
	After *struct {
		Primary string `json:"primary"`
	} `json:"placement_after"`
	Requester string `json:"requester"`
}

// historyRows logs events as the projector would, each with the
// subjects it touched.
func (e *env) historyRows() {
	e.t.Helper()
	e.exec(`
INSERT INTO event_log (id, topic, partition, "offset", type, version, time, key, actor, why, request_id, instance, payload) VALUES
  ('e1', 'drove.inventory', 0, 1, 'node.announced', 1, now(), 'node-a1', 'seed', 'demo', '', '', '{"name":"node-a1","offline":false,"drained":false}'),
  ('e2', 'drove.requests', 0, 1, 'evacuation.requested', 1, now(), 'r1', 'alice', 'disk swap', 'r1', '', '{"request":"r1","nodes":["node-a1"]}'),
  ('e3', 'drove.inventory', 0, 2, 'node.updated', 1, now(), 'node-a1', 'planner', 'drain', 'r1', '', '{"name":"node-a1","offline":false,"drained":true}'),
  ('e4', 'drove.inventory', 1, 1, 'instance.placed', 1, now(), 'i1', 'executor', 'moved', 'r1', 'i1',
   '{"instance":"i1","group":"g1","primary_node":"node-a2","previous_group":"g1","previous_primary":"node-a1"}');
INSERT INTO history_subjects (kind, subject, event_id) VALUES
  ('node', 'node-a1', 'e1'), ('request', 'r1', 'e2'), ('node', 'node-a1', 'e2'), ('node', 'node-a1', 'e3'),
  ('request', 'r1', 'e3'), ('instance', 'i1', 'e4'), ('node', 'node-a1', 'e4'), ('node', 'node-a2', 'e4'),
  ('request', 'r1', 'e4');`)
}

func TestHistoryListsWhatChangedInLogOrder(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.historyRows()
	var node struct {
		Items []historyEntry `json:"items"`
		Next  string         `json:"next"`
	}
	e.get("/v1/history/node/node-a1", &node)
	if len(node.Items) != 4 {
		t.Fatalf("node history: %+v", node.Items)
	}
	drained, placed := node.Items[2], node.Items[3]
	if drained.From != "online" || drained.To != "online, drained" || drained.Requester != "alice" {
		t.Errorf("the drain: %+v", drained)
	}
	if placed.Before == nil || placed.Before.Primary != "node-a1" || placed.After.Primary != "node-a2" {
		t.Errorf("the placement: %+v", placed)
	}
	// Paged by seq.
	var page struct {
		Items []historyEntry `json:"items"`
		Next  string         `json:"next"`
	}
	e.get("/v1/history/node/node-a1?limit=3", &page)
	if len(page.Items) != 3 || page.Next != fmt.Sprint(page.Items[2].Seq) {
		t.Fatalf("first page: %+v next %q", page.Items, page.Next)
	}
	var last struct {
		Items []historyEntry `json:"items"`
		Next  string         `json:"next"`
	}
	e.get("/v1/history/node/node-a1?limit=3&after="+page.Next, &last)
	if len(last.Items) != 1 || last.Items[0].Type != "instance.placed" || last.Next != "" {
		t.Fatalf("second page: %+v next %q", last.Items, last.Next)
	}
	for path, want := range map[string]int{
		"/v1/history/bogus/x":                   http.StatusNotFound,
		"/v1/history/node/node-a1?after=seq9":   http.StatusBadRequest,
		"/v1/history/node/node-a1?limit=0":      http.StatusBadRequest,
		"/v1/instances?at=yesterday":            http.StatusBadRequest,
		"/v1/instances?at=2025-01-01T00:00:00Z": http.StatusNotImplemented,
	} {
		if status, body := e.do(http.MethodGet, path, ""); status != want {
			t.Errorf("GET %s = %d %s, want %d", path, status, body, want)
		}
	}
}

func TestHistoryOfOwnInstancesOnly(t *testing.T) {
	e := newEnv(t, withTokens)
	e.seed()
	e.historyRows()
	for _, c := range []struct {
		tok, path string
		want      int
	}{
		{acct1Token, "/v1/history/instance/i1", http.StatusOK},
		{acct2Token, "/v1/history/instance/i1", http.StatusForbidden},
		{acct1Token, "/v1/history/node/node-a1", http.StatusForbidden},
		{acct1Token, "/v1/history/request/r1", http.StatusForbidden},
		{opToken, "/v1/history/request/r1", http.StatusOK},
	} {
		if status, body := e.do(http.MethodGet, c.path, "", bearer(c.tok)...); status != c.want {
			t.Errorf("%s: GET %s = %d %s, want %d", c.tok, c.path, status, body, c.want)
		}
	}
}

// TestInstancesAtAnswersFromThePastSchema: ?at= reads the schema
// Config.PointInTime names, and its bad bounds are the caller's.
func TestInstancesAtAnswersFromThePastSchema(t *testing.T) {
	var asked time.Time
	e := newEnv(t, func(c *gateway.Config) {
		c.PointInTime = func(_ context.Context, at time.Time) (string, error) {
			if at.After(time.Now()) {
				return "", fmt.Errorf("%w: in the future", gateway.ErrBadBound)
			}
			asked = at
			return testSchema, nil // the test's views stand in for a past schema
		}
	})
	e.seed()
	var list struct {
		Items []struct{ Name string } `json:"items"`
	}
	e.get("/v1/instances?at=2025-01-01T00:00:00.5Z", &list)
	if len(list.Items) != 3 || !asked.Equal(time.Date(2025, 1, 1, 0, 0, 0, 5e8, time.UTC)) {
		t.Fatalf("?at= listed %+v, asked for %v", list.Items, asked)
	}
	e.get("/v1/nodes?at=2025-01-01T00:00:00Z", &list)
	if len(list.Items) != 3 {
		t.Fatalf("nodes ?at= listed %+v", list.Items)
	}
	if status, body := e.do(http.MethodGet, "/v1/instances?at=2999-01-01T00:00:00Z", ""); status != http.StatusBadRequest {
		t.Errorf("a future ?at= = %d %s", status, body)
	}
}

// TestHistoryShowsARefusedNodeAction: the planner service's refusal of
// an undrain is in the node's history, said so in its summary.
func TestHistoryShowsARefusedNodeAction(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.exec(`
INSERT INTO event_log (id, topic, partition, "offset", type, version, time, key, actor, why, request_id, instance, payload) VALUES
  ('a1', 'drove.inventory', 0, 1, 'node.action_ended', 1, now(), 'node-a2', 'planner', 'undrain refused', 'na-1', '',
   '{"request":"na-1","node":"node-a2","action":"undrain","refused":true,"reason":"evacuation r9 empties it"}');
INSERT INTO history_subjects (kind, subject, event_id) VALUES ('node', 'node-a2', 'a1'), ('request', 'na-1', 'a1');`)
	var h struct {
		Items []historyEntry `json:"items"`
	}
	e.get("/v1/history/node/node-a2", &h)
	if len(h.Items) != 1 || !strings.Contains(h.Items[0].Summary, "refused") || !strings.Contains(h.Items[0].Summary, "evacuation r9") {
		t.Fatalf("node-a2's history: %+v", h.Items)
	}
}
