package gateway_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway"
)

// holdI1 makes request r-active hold i1: planned, not finished, with i1's
// job not ended.
func (e *env) holdI1() {
	e.t.Helper()
	e.exec(`
INSERT INTO requests (id, kind, nodes, mode, requested_at, planned_at)
  VALUES ('r-active', 'evacuation', '{node-a2}', 'primary-only', now(), now());
INSERT INTO jobs (request, idx, instance, released_at) VALUES ('r-active', 0, 'i1', now());
-- A finished request and an ended job hold nothing.
INSERT INTO requests (id, kind, nodes, mode, requested_at, planned_at, finished_at)
  VALUES ('r-done', 'evacuation', '{node-b1}', 'all', now(), now(), now());
INSERT INTO jobs (request, idx, instance, released_at) VALUES ('r-done', 0, 'i3', now());`)
}

func TestCommandValidationAppendsNothing(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.holdI1()
	cases := []struct {
		name, path, body   string
		status             int
		code, field, where string // where: a word the message must hold
	}{
		{"malformed JSON", "/v1/evacuations", `{"nodes": [`, 400, gateway.CodeBadRequest, "body", "malformed"},
		{"not an object", "/v1/evacuations", `["node-a1"]`, 400, gateway.CodeBadRequest, "body", "object"},
		{"trailing data", "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "all"} {}`, 400, gateway.CodeBadRequest, "body", "after"},
		{"empty body", "/v1/evacuations", ``, 400, gateway.CodeBadRequest, "body", "missing"},
		{"unknown field", "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "all", "force": true}`, 400, gateway.CodeBadRequest, "force", "unknown field"},
		{"wrong type", "/v1/evacuations", `{"nodes": "node-a1", "mode": "all"}`, 400, gateway.CodeBadRequest, "nodes", "array"},
		{"wrong element type", "/v1/evacuations", `{"nodes": ["node-a1", 7], "mode": "all"}`, 400, gateway.CodeBadRequest, "nodes", "string"},
		{"wrong bool", "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "all", "dry_run": "yes"}`, 400, gateway.CodeBadRequest, "dry_run", "true or false"},
		{"no nodes", "/v1/evacuations", `{"mode": "all"}`, 400, gateway.CodeBadRequest, "nodes", "missing"},
		{"empty nodes", "/v1/evacuations", `{"nodes": [], "mode": "all"}`, 400, gateway.CodeBadRequest, "nodes", "missing"},
		{"empty node name", "/v1/evacuations", `{"nodes": [""], "mode": "all"}`, 400, gateway.CodeBadRequest, "nodes[0]", "empty"},
		{"duplicate node", "/v1/evacuations", `{"nodes": ["node-a1", "node-a1"], "mode": "all"}`, 400, gateway.CodeBadRequest, "nodes[1]", "also"},
		{"unknown mode", "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "everything"}`, 400, gateway.CodeBadRequest, "mode", "primary-only, secondary-only, all"},
		{"no mode", "/v1/evacuations", `{"nodes": ["node-a1"]}`, 400, gateway.CodeBadRequest, "mode", "primary-only, secondary-only, all"},
		{"negative max moves", "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "all", "max_moves_per_node": -1}`, 400, gateway.CodeBadRequest, "max_moves_per_node", "negative"},
		{"unknown node", "/v1/evacuations", `{"nodes": ["node-a1", "node-zz"], "mode": "all"}`, 404, gateway.CodeNotFound, "nodes[1]", `"node-zz"`},
		{"active instance", "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "primary-only"}`, 409, gateway.CodeActive, "nodes", `"i1" is part of active request r-active`},
		{"active as secondary", "/v1/evacuations", `{"nodes": ["node-a2"], "mode": "secondary-only"}`, 409, gateway.CodeActive, "nodes", `"i1"`},

		{"group change: no instances", "/v1/group-changes", `{"target_groups": ["g2"]}`, 400, gateway.CodeBadRequest, "instances", "missing"},
		{"group change: unknown field", "/v1/group-changes", `{"instances": ["i1"], "groups": ["g2"]}`, 400, gateway.CodeBadRequest, "groups", "unknown"},
		{"group change: unknown instance", "/v1/group-changes", `{"instances": ["i2", "nope"], "target_groups": []}`, 404, gateway.CodeNotFound, "instances[1]", `"nope"`},
		{"group change: unknown group", "/v1/group-changes", `{"instances": ["i2"], "target_groups": ["g2", "gx"]}`, 404, gateway.CodeNotFound, "target_groups[1]", `"gx"`},
		{"group change: two groups", "/v1/group-changes", `{"instances": ["i2", "i3"], "target_groups": []}`, 400, gateway.CodeBadRequest, "instances[1]", "one group"},
		{"group change: active", "/v1/group-changes", `{"instances": ["i2", "i1"], "target_groups": ["g2"]}`, 409, gateway.CodeActive, "instances", "r-active"},

		{"approve unknown", "/v1/requests/nope/approve", ``, 404, gateway.CodeNotFound, "id", "nope"},
		{"approve running", "/v1/requests/r-active/approve", ``, 409, gateway.CodeConflict, "id", "running"},
		{"approve bad body", "/v1/requests/r-active/approve", `{"why": 1}`, 400, gateway.CodeBadRequest, "why", "unknown"},
		{"cancel finished", "/v1/requests/r-done/cancel", `{}`, 409, gateway.CodeConflict, "id", "finished"},
		{"cancel unknown", "/v1/requests/nope/cancel", `{}`, 404, gateway.CodeNotFound, "id", "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.do(http.MethodPost, tc.path, tc.body, "Content-Type", "application/json")
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			eb := decodeError(t, body)
			if eb.Error.Code != tc.code || eb.Error.Field != tc.field || !strings.Contains(eb.Error.Message, tc.where) {
				t.Fatalf("error %+v, want code %s, field %s, message with %q", eb.Error, tc.code, tc.field, tc.where)
			}
			if tc.status == 409 && tc.code == gateway.CodeActive && (eb.Error.Instance == "" || eb.Error.Request != "r-active") {
				t.Fatalf("conflict does not name instance and request: %+v", eb.Error)
			}
		})
	}
	if recs := e.appended(); len(recs) != 0 {
		t.Fatalf("refused commands appended %d events, first %s", len(recs), recs[0].Event.Type)
	}
}

func TestEvacuationAppendsOneEvent(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.holdI1() // holds i1 only: evacuating node-b1 is free
	status, body := e.do(http.MethodPost, "/v1/evacuations",
		`{"nodes": ["node-b1"], "mode": "all", "ignore_soft_errors": true, "max_moves_per_node": 2, "reason": "kernel upgrade"}`,
		"X-Drove-Actor", "operator:alice")
	if status != http.StatusAccepted {
		t.Fatalf("status %d: %s", status, body)
	}
	var ans struct {
		Request string            `json:"request"`
		Status  string            `json:"status"`
		Links   map[string]string `json:"links"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Status != "accepted" || ans.Links["watch"] != "/v1/requests/"+ans.Request+"/watch" {
		t.Fatalf("answer %s", body)
	}
	recs := e.appended()
	if len(recs) != 1 {
		t.Fatalf("%d events appended, want 1", len(recs))
	}
	env := recs[0].Event
	got := as[events.EvacuationRequested](t, env)
	want := events.EvacuationRequested{Request: ans.Request, Nodes: []string{"node-b1"}, Mode: events.EvacAll,
		IgnoreSoftErrors: true, MaxMovesPerNode: 2}
	if got.Request != want.Request || strings.Join(got.Nodes, ",") != "node-b1" || got.Mode != want.Mode ||
		got.DryRun || !got.IgnoreSoftErrors || got.MaxMovesPerNode != 2 {
		t.Fatalf("payload %+v, want %+v", got, want)
	}
	if env.CorrelationID != ans.Request || env.Key != ans.Request || env.Producer != "gateway" ||
		env.Reason != (events.Reason{Actor: "operator:alice", Why: "kernel upgrade", RequestID: ans.Request}) {
		t.Fatalf("envelope %+v", env)
	}

	// The views do not show it yet, but this gateway remembers it: the same
	// call again is a conflict, and the request can be read already.
	status, body = e.do(http.MethodPost, "/v1/evacuations", `{"nodes": ["node-b1"], "mode": "primary-only"}`)
	if status != http.StatusConflict {
		t.Fatalf("second evacuation: %d %s", status, body)
	}
	if eb := decodeError(t, body); eb.Error.Instance != "i3" || eb.Error.Request != ans.Request {
		t.Fatalf("second evacuation: %+v", eb.Error)
	}
	var r struct {
		Status string `json:"status"`
		Actor  string `json:"actor"`
	}
	e.get("/v1/requests/"+ans.Request, &r)
	if r.Status != "accepted" || r.Actor != "operator:alice" {
		t.Fatalf("just-accepted request reads %+v", r)
	}
	if n := len(e.appended()); n != 1 {
		t.Fatalf("%d events after the refused repeat, want 1", n)
	}

	// A group change appends its own event; the default actor is operator.
	status, body = e.do(http.MethodPost, "/v1/group-changes", `{"instances": ["i2"], "target_groups": ["g2"]}`)
	if status != http.StatusAccepted {
		t.Fatalf("group change: %d %s", status, body)
	}
	recs = e.appended()
	if len(recs) != 2 {
		t.Fatalf("%d events, want 2", len(recs))
	}
	for _, rec := range recs {
		if rec.Event.Type != events.TypeGroupChangeRequested {
			continue
		}
		gc := as[events.GroupChangeRequested](t, rec.Event)
		if strings.Join(gc.Instances, ",") != "i2" || strings.Join(gc.TargetGroups, ",") != "g2" ||
			rec.Event.Reason.Actor != "operator" || rec.Event.Reason.Why != "move i2 to g2" {
			t.Fatalf("group change event %+v %+v", gc, rec.Event.Reason)
		}
	}
}

func TestDryRunAnswersWithThePlan(t *testing.T) {
	e := newEnv(t)
	e.seed()
	// Stand in for the planner and projector: once the request is in the
	// log, write its row and plan to the views.
	// (It reports on a channel: only the test's goroutine may fail it.)
	var wg sync.WaitGroup
	wg.Add(1)
	standIn := make(chan error, 1)
	go func() {
		defer wg.Done()
		var id string
		deadline := time.Now().Add(10 * time.Second)
		for id == "" && time.Now().Before(deadline) {
			recs, err := kafka.ReadAll(e.ctx, e.kafka, events.TopicRequests)
			if err != nil {
				standIn <- err
				return
			}
			if len(recs) > 0 {
				id = recs[0].Event.CorrelationID
			}
		}
		if id == "" {
			standIn <- errors.New("no request appended within 10s")
			return
		}
		standIn <- pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(e.ctx, `INSERT INTO views.requests (id, kind, nodes, mode, dry_run, requested_at, planned_at, plans)
  VALUES ($1, 'evacuation', '{node-a1}', 'all', true, now(), now(), 1)`, id)
			if err == nil {
				_, err = tx.Exec(e.ctx, `INSERT INTO views.plans (request, moved, failed, jobs, score_before, score_after, computed_at)
  VALUES ($1, '[{"instance":"i1","group":"g1","nodes":["node-a2"]}]', '[]',
  '[{"index":0,"opcodes":[{"op_id":"OP_INSTANCE_MIGRATE","instance":"i1","from":"node-a1","to":"node-a2"}]}]', 2.5, 1.25, now())`, id)
			}
			return err
		})
	}()
	status, body := e.do(http.MethodPost, "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "all", "dry_run": true}`)
	wg.Wait()
	if err := <-standIn; err != nil {
		t.Fatalf("standing in for the planner: %v", err)
	}
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var ans struct {
		Request string `json:"request"`
		Status  string `json:"status"`
		Plan    struct {
			Moved       []events.Moved `json:"moved"`
			Jobs        []events.Job   `json:"jobs"`
			ScoreBefore float64        `json:"score_before"`
			ScoreAfter  float64        `json:"score_after"`
			Moves       []struct {
				Instance            string `json:"instance"`
				PredictedDowntimeMS int64  `json:"predicted_downtime_ms"`
				How                 string `json:"how"`
			} `json:"moves"`
		} `json:"plan"`
		Links map[string]string `json:"links"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Status != "awaiting-approval" || len(ans.Plan.Moved) != 1 || ans.Plan.Moved[0].Instance != "i1" ||
		len(ans.Plan.Jobs) != 1 || ans.Plan.ScoreAfter != 1.25 || ans.Links["approve"] == "" {
		t.Fatalf("answer %s", body)
	}
	// Each move with its predicted downtime: i1's drbd disks send no
	// final delta, so the stated default of a live switch.
	if m := ans.Plan.Moves; len(m) != 1 || m[0].Instance != "i1" || m[0].PredictedDowntimeMS != 130 ||
		!strings.Contains(m[0].How, "no switch measured yet: 130 ms assumed") {
		t.Fatalf("the plan's moves %+v; want i1's, 130 ms by the stated default", m)
	}
	got := as[events.EvacuationRequested](t, e.appended()[0].Event)
	if !got.DryRun {
		t.Fatalf("appended %+v, want a dry run", got)
	}

	// Approving it appends RequestApproved; approving twice is the
	// planner's business once the views say it is running.
	status, body = e.do(http.MethodPost, "/v1/requests/"+ans.Request+"/approve", `{"reason": "looks good"}`, "X-Drove-Actor", "operator:bob")
	if status != http.StatusAccepted {
		t.Fatalf("approve: %d %s", status, body)
	}
	recs := e.appended()
	if len(recs) != 2 || recs[1].Event.Type != events.TypeRequestApproved && recs[0].Event.Type != events.TypeRequestApproved {
		t.Fatalf("after approve: %d events", len(recs))
	}
	for _, r := range recs {
		if r.Event.Type == events.TypeRequestApproved &&
			r.Event.Reason != (events.Reason{Actor: "operator:bob", Why: "looks good", RequestID: ans.Request}) {
			t.Fatalf("approval reason %+v", r.Event.Reason)
		}
	}
	// Cancelling it is allowed until it finishes.
	if status, body := e.do(http.MethodPost, "/v1/requests/"+ans.Request+"/cancel", ""); status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", status, body)
	}
	if n := len(e.appended()); n != 3 {
		t.Fatalf("%d events after cancel, want 3", n)
	}
}

func TestDryRunWithoutPlanAnswers202(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.DryRunWait = 200 * time.Millisecond })
	e.seed()
	status, body := e.do(http.MethodPost, "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "all", "dry_run": true}`)
	if status != http.StatusAccepted || !strings.Contains(string(body), "did not appear within 200ms") {
		t.Fatalf("status %d: %s", status, body)
	}
	if n := len(e.appended()); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
}
