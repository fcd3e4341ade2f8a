package gateway_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// Undrain, offline and online: refused with 404 or 409 and nothing
// appended when the views say no; otherwise one NodeActionRequested with
// the reason trail, and the answer readable at /v1/node-actions/{id}.
func TestNodeActions(t *testing.T) {
	e := newEnv(t)
	e.seed() // node-b1 drained, node-a1 and node-a2 in service
	e.exec(`INSERT INTO requests (id, kind, nodes, mode, requested_at, planned_at)
  VALUES ('r-evac', 'evacuation', '{node-a2}', 'all', now(), now());`)
	refused := []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/nodes/nope/undrain", http.StatusNotFound, "not_found"},
		{"/v1/nodes/node-a1/undrain", http.StatusConflict, "conflict"},     // not drained
		{"/v1/nodes/node-a1/online", http.StatusConflict, "conflict"},      // not offline
		{"/v1/nodes/node-a1/undrain?x=1", http.StatusConflict, "conflict"}, // query ignored
	}
	for _, c := range refused {
		status, body := e.do(http.MethodPost, c.path, "")
		if eb := decodeError(t, body); status != c.status || eb.Error.Code != c.code {
			t.Errorf("POST %s: %d %s; want %d %s", c.path, status, body, c.status, c.code)
		}
	}
	// node-a2 drained by the evacuation still active: 409 naming it.
	e.exec(`UPDATE nodes SET drained = true WHERE name = 'node-a2'`)
	status, body := e.do(http.MethodPost, "/v1/nodes/node-a2/undrain", `{"reason": "disk swapped"}`)
	if eb := decodeError(t, body); status != http.StatusConflict || eb.Error.Request != "r-evac" || eb.Error.Code != "active_request" {
		t.Fatalf("undrain while emptied: %d %s", status, body)
	}
	if n := len(e.appended()); n != 0 {
		t.Fatalf("%d events appended by refused calls", n)
	}
	// An evacuation of node-a2 this gateway just appended holds it too,
	// until the views show it finished.
	e.exec(`UPDATE requests SET finished_at = now() WHERE id = 'r-evac'`)
	status, body = e.do(http.MethodPost, "/v1/evacuations", `{"nodes": ["node-a2"], "mode": "all"}`)
	if status != http.StatusAccepted {
		t.Fatalf("evacuation: %d %s", status, body)
	}
	var evac struct {
		Request string `json:"request"`
	}
	_ = json.Unmarshal(body, &evac)
	status, body = e.do(http.MethodPost, "/v1/nodes/node-a2/undrain", `{}`)
	if eb := decodeError(t, body); status != http.StatusConflict || eb.Error.Request != evac.Request {
		t.Fatalf("undrain while just evacuated: %d %s", status, body)
	}
	e.exec(`INSERT INTO requests (id, kind, nodes, mode, requested_at, planned_at, finished_at)
  VALUES ($1, 'evacuation', '{node-a2}', 'all', now(), now(), now())`, evac.Request)
	if status, body := e.do(http.MethodPost, "/v1/nodes/node-a2/undrain", `{}`); status != http.StatusAccepted {
		t.Fatalf("undrain after the evacuation finished: %d %s", status, body)
	}

	status, body = e.do(http.MethodPost, "/v1/nodes/node-b1/undrain", `{"reason": "disk swapped"}`,
		"X-Drove-Actor", "operator:alice")
	if status != http.StatusAccepted {
		t.Fatalf("undrain: %d %s", status, body)
	}
	var ans struct {
		Request string            `json:"request"`
		Links   map[string]string `json:"links"`
	}
	if err := json.Unmarshal(body, &ans); err != nil || ans.Links["self"] != "/v1/node-actions/"+ans.Request {
		t.Fatalf("answer %s (%v)", body, err)
	}
	status, _ = e.do(http.MethodPost, "/v1/nodes/node-a1/offline", `{}`)
	if status != http.StatusAccepted {
		t.Fatalf("offline: %d", status)
	}
	recs := e.appended()
	recs = slices.DeleteFunc(recs, func(r kafka.Record) bool {
		a, err := events.As[events.NodeActionRequested](r.Event)
		return err != nil || a.Node == "node-a2"
	})
	if len(recs) != 2 {
		t.Fatalf("%d events appended, want 2", len(recs))
	}
	if as[events.NodeActionRequested](t, recs[0].Event).Node != "node-b1" {
		recs[0], recs[1] = recs[1], recs[0] // two keys, two partitions: no order between them
	}
	got := as[events.NodeActionRequested](t, recs[0].Event)
	if got != (events.NodeActionRequested{Request: ans.Request, Node: "node-b1", Action: events.NodeUndrain}) ||
		recs[0].Event.Reason != (events.Reason{Actor: "operator:alice", Why: "disk swapped", RequestID: ans.Request}) {
		t.Fatalf("appended %+v %+v", got, recs[0].Event.Reason)
	}
	if a := as[events.NodeActionRequested](t, recs[1].Event); a.Node != "node-a1" || a.Action != events.NodeOffline {
		t.Fatalf("second appended %+v", a)
	}
	e.exec(`INSERT INTO node_actions (request, node, action, actor, why, requested_at, state, reason, ended_at)
  VALUES ('na-1', 'node-b1', 'undrain', 'operator:alice', 'disk swapped', now(), 'done', 'node node-b1 undrained', now())`)
	var a struct {
		State  string `json:"state"`
		Answer string `json:"answer"`
	}
	e.get("/v1/node-actions/na-1", &a)
	if a.State != "done" || a.Answer == "" {
		t.Fatalf("node action %+v", a)
	}
}
