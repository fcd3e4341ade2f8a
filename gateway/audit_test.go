package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/events"
)

// auditEntry is what the tests read of an audit trail line.
type auditEntry struct {
	Seq     int64  `json:"seq"`
	Type    string `json:"type"`
	Actor   string `json:"actor"`
	Account string `json:"account"`
	Action  string `json:"action"`
	Why     string `json:"why"`
	Outcome string `json:"outcome"`
	Count   int    `json:"count"`
}

type auditPage struct {
	Items []auditEntry `json:"items"`
	Next  string       `json:"next"`
}

// read decodes a 200 answer of GET path as an operator into out.
func (e *env) read(path string, out any) {
	e.t.Helper()
	status, body := e.do(http.MethodGet, path, "", bearer(opToken)...)
	if status != http.StatusOK {
		e.t.Fatalf("GET %s = %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		e.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// logAudit logs the gateway's audit records as the projector would:
// envelope, reason trail and payload.
func (e *env) logAudit() {
	e.t.Helper()
	for _, r := range e.topic(events.TopicAudit) {
		ev := r.Event
		err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(e.ctx, `INSERT INTO `+testSchema+`.event_log
  (id, topic, partition, "offset", type, version, time, key, producer, actor, why, request_id, payload)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
				ev.ID, events.TopicAudit, r.Partition, r.Offset, ev.Type, ev.Version, ev.Time, ev.Key,
				ev.Producer, ev.Reason.Actor, ev.Reason.Why, ev.Reason.RequestID, ev.Payload)
			return err
		})
		if err != nil {
			e.t.Fatalf("log %s: %v", ev.Type, err)
		}
	}
}

// TestAuditListsAsksAndRefusals: an owner asking for the trail is
// refused, and that refusal is in the trail next to an operator's
// evacuation, a folded count of refusals, and filters by outcome and
// actor; progress and other events are not.
func TestAuditListsAsksAndRefusals(t *testing.T) {
	e := newEnv(t, withTokens)
	e.seed()
	e.exec(`
INSERT INTO event_log (id, topic, partition, "offset", type, version, time, key, actor, why, request_id, instance, payload) VALUES
  ('a1', 'drove.requests', 0, 1, 'evacuation.requested', 1, now(), 'r1', 'alice', 'disk swap', 'r1', '',
   '{"request":"r1","nodes":["node-a1"],"mode":"all","dry_run":true}'),
  ('a2', 'drove.inventory', 0, 1, 'node.updated', 1, now(), 'node-a1', 'planner', 'drain', 'r1', '',
   '{"name":"node-a1","offline":false,"drained":true}'),
  ('a3', 'drove.requests', 0, 2, 'request.approved', 1, now(), 'r1', 'alice', 'looks right', 'r1', '', '{"request":"r1"}');`)
	if status, body := e.do(http.MethodGet, "/v1/audit", "", bearer(acct1Token)...); status != http.StatusForbidden {
		t.Fatalf("an owner read the audit trail: %d %s", status, body)
	}
	e.logAudit()
	e.exec(`
INSERT INTO event_log (id, topic, partition, "offset", type, version, time, key, actor, why, payload) VALUES
  ('f1', 'drove.audit', 0, 100, 'audit.recorded', 1, now(), 'x', 'gateway', 'unknown token', '{"action":"refusals folded",
   "subject":" (unauthenticated)","outcome":"denied","detail":"7 refusals folded into this record (audit budget exceeded) between a and b: unknown token; first: GET /v1/nodes"}');`)

	var all auditPage
	e.read("/v1/audit", &all)
	if len(all.Items) != 4 {
		t.Fatalf("the trail: %+v", all.Items)
	}
	evac, approve, refused, folded := all.Items[0], all.Items[1], all.Items[2], all.Items[3]
	if evac.Actor != "alice" || evac.Why != "disk swap" || evac.Outcome != "requested" ||
		!strings.Contains(evac.Action, "evacuate node-a1") || !strings.Contains(evac.Action, "dry run") || evac.Count != 1 {
		t.Errorf("the evacuation: %+v", evac)
	}
	if approve.Action != "approve request r1" || approve.Why != "looks right" {
		t.Errorf("the approval: %+v", approve)
	}
	if refused.Type != events.TypeAuditRecorded || refused.Outcome != "denied" || refused.Actor != "acct-1" ||
		refused.Account != "acct-1 (owner)" || refused.Action != "GET /v1/audit" || refused.Count != 1 ||
		!strings.Contains(refused.Why, "operators") {
		t.Errorf("the refusal: %+v", refused)
	}
	if folded.Count != 7 || folded.Outcome != "denied" {
		t.Errorf("the folded refusals: %+v", folded)
	}

	var denied auditPage
	e.read("/v1/audit?outcome=denied", &denied)
	if len(denied.Items) != 2 || denied.Items[0].Seq != refused.Seq {
		t.Errorf("?outcome=denied: %+v", denied.Items)
	}
	var mine auditPage
	e.read("/v1/audit?actor=acct-1", &mine)
	if len(mine.Items) != 1 || mine.Items[0].Seq != refused.Seq {
		t.Errorf("?actor=acct-1: %+v", mine.Items)
	}
	var page, rest auditPage
	e.read("/v1/audit?limit=3", &page)
	e.read("/v1/audit?limit=3&after="+page.Next, &rest)
	if len(page.Items) != 3 || len(rest.Items) != 1 || rest.Items[0].Seq != folded.Seq || rest.Next != "" {
		t.Errorf("pages: %+v next %q, then %+v", page.Items, page.Next, rest.Items)
	}
	for _, path := range []string{"/v1/audit?outcome=maybe", "/v1/audit?limit=0", "/v1/audit?after=seq9"} {
		if status, body := e.do(http.MethodGet, path, "", bearer(opToken)...); status != http.StatusBadRequest {
			t.Errorf("GET %s = %d %s", path, status, body)
		}
	}
}
