package gateway_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/gateway/wire"
)

// seedRequests adds a finished evacuation with a plan, jobs, a migration
// and its progress events, and a few requests in other states.
func (e *env) seedRequests() {
	e.t.Helper()
	e.exec(`
INSERT INTO requests (id, kind, nodes, mode, actor, why, requested_at, planned_at, plans, finished_at, moved, failed) VALUES
  ('r1', 'evacuation', '{node-a1}', 'all', 'operator:alice', 'kernel', now(), now(), 1, now(),
   '[{"instance":"i1","group":"g1","nodes":["node-a2"]}]', '[{"instance":"i2","reason":"no room"}]');
INSERT INTO requests (id, kind, instances, target_groups, requested_at) VALUES
  ('r2', 'group-change', '{i3}', '{g1}', now());
INSERT INTO requests (id, kind, nodes, mode, dry_run, requested_at, planned_at, plans) VALUES
  ('r3', 'evacuation', '{node-a2}', 'primary-only', true, now(), now(), 1);
INSERT INTO plans (request, moved, failed, jobs, score_before, score_after, computed_at) VALUES
  ('r1', '[{"instance":"i1","group":"g1","nodes":["node-a2"]}]', '[{"instance":"i2","reason":"no room"}]',
   '[{"index":0},{"index":1}]', 3.5, 1.5, now());
INSERT INTO jobs (request, idx, instance, released_at, ended_at, status, cancelled_at, cancel_reason) VALUES
  ('r1', 0, 'i1', now(), now(), 'success', NULL, ''),
  ('r1', 1, 'i2', NULL, NULL, '', now(), 'dependency failed'),
  ('r3', 0, 'i2', NULL, NULL, '', NULL, '');
INSERT INTO moves (id, request, job, idx, instance, source_node, target_node, op_id, created_at, started_at,
  finished_at, end_state, phase, syncs, last_sync_bytes) VALUES
  ('r1/0/0', 'r1', 0, 0, 'i1', 'node-a1', 'node-a2', 'OP_INSTANCE_MIGRATE', now(), now(), now(), 'success', 'switch', 2, 1024);`)
	e.logEvent("evacuation.requested", "r1", "", map[string]any{"request": "r1"})
	e.logEvent("move.progress", "r1", "i1", map[string]any{"request": "r1", "job": 0, "index": 0, "instance": "i1", "phase": "sync", "state": "running"})
	e.logEvent("move.progress", "r1", "i1", map[string]any{"request": "r1", "job": 1, "index": 0, "instance": "i1", "phase": "sync", "state": "running"})
	e.logEvent("move.end", "r1", "i1", map[string]any{"request": "r1", "job": 0, "index": 0, "instance": "i1", "phase": "switch", "state": "successful"})
	e.logEvent("request.finished", "r1", "", map[string]any{"request": "r1"})
}

type listOf[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next"`
}

func TestReads(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.seedRequests()

	checkNodeReads(t, e)
	checkInstanceReads(t, e)
	checkRequestReads(t, e)
	checkJobReads(t, e)
	checkMigrationReads(t, e)
	checkReadErrors(t, e)
}

// checkNodeReads lists nodes, filtered by group and drain, and reads one.
func checkNodeReads(t *testing.T, e *env) {
	var nodes listOf[wire.Node]
	e.get("/v1/nodes", &nodes)
	if got := names3(nodes.Items, func(n wire.Node) string { return n.Name }); got != "node-a1,node-a2,node-b1" || nodes.Next != "" {
		t.Fatalf("nodes %s next %q", got, nodes.Next)
	}
	e.get("/v1/nodes?group=g1&drained=false", &nodes)
	if got := names3(nodes.Items, func(n wire.Node) string { return n.Name }); got != "node-a1,node-a2" {
		t.Fatalf("g1 undrained nodes %s", got)
	}
	e.get("/v1/nodes?drained=true", &nodes)
	if got := names3(nodes.Items, func(n wire.Node) string { return n.Name }); got != "node-b1" {
		t.Fatalf("drained nodes %s", got)
	}
	var n wire.Node
	e.get("/v1/nodes/node-a1", &n)
	if n.Group != "g1" || n.PrimaryInstances != 1 || n.SecondaryInstances != 1 || n.TotalCPUs != 32 {
		t.Fatalf("node-a1 %+v", n)
	}
}

// checkInstanceReads lists instances by node, group and owner, reads one, and lists groups.
func checkInstanceReads(t *testing.T, e *env) {
	var insts listOf[wire.Instance]
	e.get("/v1/instances?node=node-a1", &insts)
	if got := names3(insts.Items, func(i wire.Instance) string { return i.Name }); got != "i1,i2" {
		t.Fatalf("instances on node-a1 %s", got)
	}
	e.get("/v1/instances?group=g1&owner=acct-2", &insts) // i2's group comes from its primary
	if got := names3(insts.Items, func(i wire.Instance) string { return i.Name }); got != "i2" {
		t.Fatalf("g1 instances of acct-2 %s", got)
	}
	var in wire.Instance
	e.get("/v1/instances/i2", &in)
	if in.Primary != "node-a2" || in.Secondary != "node-a1" || in.Group != "g1" {
		t.Fatalf("i2 %+v", in)
	}
	var groups listOf[wire.Group]
	e.get("/v1/groups", &groups)
	if got := names3(groups.Items, func(g wire.Group) string { return fmt.Sprintf("%s:%d", g.Name, g.Nodes) }); got != "g1:2,g2:1,g3:0" {
		t.Fatalf("groups %s", got)
	}
}

// checkRequestReads lists requests by kind and status and reads r1 in detail with its plan.
func checkRequestReads(t *testing.T, e *env) {
	var reqs listOf[wire.Request]
	e.get("/v1/requests", &reqs)
	if got := names3(reqs.Items, func(r wire.Request) string { return r.ID + ":" + r.Status }); got != "r1:finished,r2:planning,r3:awaiting-approval" {
		t.Fatalf("requests %s", got)
	}
	e.get("/v1/requests?kind=evacuation&status=awaiting-approval", &reqs)
	if got := names3(reqs.Items, func(r wire.Request) string { return r.ID }); got != "r3" {
		t.Fatalf("evacuations awaiting approval %s", got)
	}
	var d struct {
		ID      string            `json:"id"`
		Status  string            `json:"status"`
		Reason  string            `json:"reason"`
		Plan    *wire.PlanSummary `json:"plan"`
		Jobs    []wire.JobState   `json:"jobs"`
		Outcome *struct {
			Moved  []map[string]any `json:"moved"`
			Failed []map[string]any `json:"failed"`
		} `json:"outcome"`
	}
	e.get("/v1/requests/r1", &d)
	if d.Status != "finished" || d.Reason != "kernel" || d.Plan == nil || d.Plan.Moved != 1 || d.Plan.Failed != 1 ||
		d.Plan.Jobs != 2 || d.Plan.ScoreBefore != 3.5 || len(d.Jobs) != 2 || d.Jobs[0].State != "success" ||
		d.Jobs[1].State != "canceled" || d.Outcome == nil || len(d.Outcome.Moved) != 1 || d.Outcome.Failed[0]["reason"] != "no room" {
		t.Fatalf("r1 detail %+v", d)
	}
	var p wire.PlanRow
	e.get("/v1/requests/r1/plan", &p)
	if p.ScoreAfter != 1.5 || !strings.Contains(string(p.Jobs), `"index":1`) {
		t.Fatalf("plan %+v", p)
	}
}

// checkJobReads lists r1's jobs and jobs by status and request.
func checkJobReads(t *testing.T, e *env) {
	var jobs listOf[wire.Job]
	e.get("/v1/requests/r1/jobs", &jobs)
	if len(jobs.Items) != 2 || jobs.Items[1].CancelReason != "dependency failed" {
		t.Fatalf("r1 jobs %+v", jobs)
	}
	e.get("/v1/jobs?status=waiting", &jobs)
	if got := names3(jobs.Items, func(j wire.Job) string { return fmt.Sprintf("%s/%d", j.Request, j.Index) }); got != "r3/0" {
		t.Fatalf("waiting jobs %s", got)
	}
	e.get("/v1/jobs?request=r1&status=success", &jobs)
	if got := names3(jobs.Items, func(j wire.Job) string { return fmt.Sprintf("%s/%d", j.Request, j.Index) }); got != "r1/0" {
		t.Fatalf("r1's successful jobs %s", got)
	}
}

// checkMigrationReads lists migrations by instance, state and node and reads one by its id,
// plain and escaped.
func checkMigrationReads(t *testing.T, e *env) {
	var migs listOf[wire.Move]
	e.get("/v1/migrations?instance=i1&state=successful&node=node-a2", &migs)
	if len(migs.Items) != 1 || migs.Items[0].ID != "r1/0/0" || migs.Items[0].Account != "acct-1" {
		t.Fatalf("migrations %+v", migs)
	}
	e.get("/v1/migrations?state=running", &migs)
	if len(migs.Items) != 0 {
		t.Fatalf("running migrations %+v", migs)
	}
	var m wire.Move
	e.get("/v1/migrations/r1/0/0", &m)
	if m.State != "successful" || m.Syncs != 2 || m.Source != "node-a1" || len(m.History) != 2 ||
		m.History[0].Type != "move.progress" || m.History[1].Type != "move.end" {
		t.Fatalf("migration %+v", m)
	}
	e.get("/v1/migrations/r1%2F0%2F0", &m) // the id escaped as one segment
	if m.ID != "r1/0/0" {
		t.Fatalf("escaped migration id read %q", m.ID)
	}
}

// checkReadErrors checks that unknown things are 404s and bad filters 400s naming the
// parameter.
func checkReadErrors(t *testing.T, e *env) {
	for _, path := range []string{
		"/v1/requests/nope", "/v1/requests/nope/plan", "/v1/requests/r2/plan", "/v1/requests/nope/jobs",
		"/v1/migrations/r1/0/9", "/v1/nodes/nope", "/v1/instances/nope", "/v1/nowhere",
		"/v1/requests/nope/watch", "/v1/instances/nope/watch",
	} {
		status, body := e.do(http.MethodGet, path, "")
		if status != http.StatusNotFound || decodeError(t, body).Error.Code != gateway.CodeNotFound {
			t.Errorf("GET %s = %d %s, want a 404 JSON error", path, status, body)
		}
	}
	for _, path := range []string{
		"/v1/requests?status=sleeping", "/v1/requests?kind=rebalance", "/v1/jobs?status=done",
		"/v1/migrations?state=sleeping", "/v1/nodes?drained=yes", "/v1/requests/r1/watch?follow=maybe",
	} {
		status, body := e.do(http.MethodGet, path, "")
		if status != http.StatusBadRequest || decodeError(t, body).Error.Field == "" {
			t.Errorf("GET %s = %d %s, want a 400 naming the parameter", path, status, body)
		}
	}
}

func TestPaging(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	for i := 9; i >= 1; i-- { // inserted out of order: pages follow the key
		fmt.Fprintf(&b, "INSERT INTO groups (name, alloc_policy, updated_at) VALUES ('grp-%d', 'preferred', now());\n", i)
		fmt.Fprintf(&b, "INSERT INTO jobs (request, idx, instance) VALUES ('req-%d', 0, 'x'), ('req-%d', 1, 'y');\n", i, i)
	}
	e.exec(b.String())

	var all []string
	path := "/v1/groups?limit=4"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		var page listOf[wire.Group]
		e.get(path, &page)
		for _, g := range page.Items {
			all = append(all, g.Name)
		}
		if page.Next == "" {
			break
		}
		if len(page.Items) != 4 {
			t.Fatalf("a full page has %d items", len(page.Items))
		}
		path = "/v1/groups?limit=4&after=" + page.Next
	}
	want := []string{"grp-1", "grp-2", "grp-3", "grp-4", "grp-5", "grp-6", "grp-7", "grp-8", "grp-9"}
	if !slices.Equal(all, want) {
		t.Fatalf("paged groups %v", all)
	}

	var jobs listOf[wire.Job]
	e.get("/v1/jobs?limit=2", &jobs)
	if jobs.Next != "req-1/1" {
		t.Fatalf("jobs cursor %q", jobs.Next)
	}
	e.get("/v1/jobs?limit=3&after="+jobs.Next, &jobs)
	if got := names3(jobs.Items, func(j wire.Job) string { return fmt.Sprintf("%s/%d", j.Request, j.Index) }); got != "req-2/0,req-2/1,req-3/0" {
		t.Fatalf("second jobs page %s", got)
	}

	for _, q := range []string{"limit=0", "limit=1001", "limit=ten", "limit=-1", "limit="} {
		status, body := e.do(http.MethodGet, "/v1/groups?"+q, "")
		if status != http.StatusBadRequest || decodeError(t, body).Error.Field != "limit" {
			t.Errorf("?%s = %d %s", q, status, body)
		}
	}
	status, body := e.do(http.MethodGet, "/v1/jobs?after=nocursor", "")
	if status != http.StatusBadRequest || decodeError(t, body).Error.Field != "after" {
		t.Errorf("bad jobs cursor = %d %s", status, body)
	}
	e.get("/v1/groups?limit=1000", &struct{}{})
}

func names3[T any](xs []T, f func(T) string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return strings.Join(out, ",")
}
