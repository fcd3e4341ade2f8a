package gen

import (
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// routes is every route the gateway registers, with what it reads and
// answers; the document's paths are written from it. The gateway's tests
// check both ways that it lists exactly the routes the gateway registers
// (gateway/openapi_test.go). Error answers are the Error shape, listed
// by status (errorResponses).
var routes = []route{
	{
		method: "GET", path: "/", tag: "console",
		summary: "Sends a browser to the web console",
		answers: []answer{
			{302, "Found: to /console/", nil},
		},
	},
	{
		method: "GET", path: "/console/{path}", tag: "console",
		summary: "The web console: pages (HTML) and their embedded assets",
		params: []obj{
			{"name": "path", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "a page (requests/ID, nodes/NAME, ...) or assets/FILE"},
		},
		answers: []answer{
			{200, "A page or an asset", text("text/html")},
			{404, "No such page", text("text/html")},
			{405, "Only GET and HEAD", nil},
		},
	},
	{
		method: "GET", path: "/healthz", tag: "system",
		summary: "Health of Postgres, Kafka and (drove dev) each part",
		answers: []answer{
			{200, "OK", typed(wire.Health{})},
			{503, "Something is down: checks says what", typed(wire.Health{})},
		},
	},
	{
		method: "GET", path: "/metrics", tag: "system",
		summary: "Prometheus metrics",
		answers: []answer{
			{200, "Prometheus text format", text("text/plain")},
		},
	},
	{
		method: "GET", path: "/v1/audit", tag: "history",
		summary: "The audit trail: who asked what, who was refused, in log order",
		desc:    "The asks people made (evacuations, group changes, approvals, cancels, migrate actions, settings changes, node actions), each with its reason trail, and the gateway's audit records (audit.recorded on drove.audit: every 401 and 403, folded into one record with a count when the refusal budget is exceeded), oldest first: page on with ?after= the 'next' cursor. Operators only (403).",
		params: []obj{
			param("limit"),
			param("afterSeq"),
			{"name": "outcome", "in": "query", "schema": obj{"type": "string", "enum": []string{"requested", "allowed", "denied"}}, "description": "only entries with this outcome: 'denied' lists the refusals"},
			{"name": "actor", "in": "query", "schema": obj{"type": "string"}, "description": "only what this actor asked, or this account was refused"},
		},
		answers: []answer{
			{200, "OK", pageOf(typed(wire.AuditEntry{}))},
		},
		errors: []int{400, 401, 403, 500, 503},
	},
	{
		method: "POST", path: "/v1/evacuations", tag: "requests",
		summary: "Evacuate nodes (dry_run: plan only, approve later)",
		body:    wire.Evacuation{}, bodyRequired: true,
		answers: []answer{
			{200, "Dry run: the plan (awaiting-approval) or the rejection", typed(wire.Accepted{})},
			{202, "Accepted: appended to the log; the views show it shortly", typed(wire.Accepted{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "POST", path: "/v1/group-changes", tag: "requests",
		summary: "Move instances to another group",
		body:    wire.GroupChange{}, bodyRequired: true,
		answers: []answer{
			{200, "Dry run: the plan (awaiting-approval) or the rejection", typed(wire.Accepted{})},
			{202, "Accepted: appended to the log; the views show it shortly", typed(wire.Accepted{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "GET", path: "/v1/groups", tag: "cluster",
		summary: "Node groups",
		params: []obj{
			param("limit"),
			param("after"),
		},
		answers: []answer{
			{200, "OK", pageOf(typed(wire.Group{}))},
		},
		errors: []int{400, 401, 403, 500, 503},
	},
	{
		method: "GET", path: "/v1/history/{kind}/{id}", tag: "history",
		summary: "Every event that touched an instance, a node, a request or a migration, in log order",
		desc:    "Each item says who asked and why (actor, why; requester, requester_why: the first ask of its request or migration) and what changed. Owners read the histories of their own instances and of their instances' migrations; node and request histories are the operators' (403).",
		params: []obj{
			{"name": "kind", "in": "path", "required": true, "schema": obj{"type": "string", "enum": []string{"instance", "node", "request", "migration"}}, "description": "what the history is of; another kind is 404"},
			{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "its name or id"},
			param("limit"),
			param("afterSeq"),
		},
		answers: []answer{
			{200, "OK", pageOf(typed(wire.HistoryEntry{}))},
		},
		errors: []int{400, 401, 403, 404, 500, 503},
	},
	{
		method: "GET", path: "/v1/instances", tag: "instances",
		summary: "Instances (an owner sees only theirs)",
		params: []obj{
			param("limit"),
			param("after"),
			{"name": "at", "in": "query", "schema": obj{"type": "string", "format": "date-time"}, "description": "point in time (RFC 3339): the list as the views stood then; 400 when malformed or in the future, 501 when the gateway has no point-in-time views"},
			{"name": "node", "in": "query", "schema": obj{"type": "string"}, "description": "filter: primary or secondary on this node"},
			{"name": "group", "in": "query", "schema": obj{"type": "string"}, "description": "filter"},
			{"name": "owner", "in": "query", "schema": obj{"type": "string"}, "description": "filter"},
		},
		answers: []answer{
			{200, "OK", pageOf(typed(wire.Instance{}))},
		},
		errors: []int{400, 401, 403, 500, 501, 503},
	},
	{
		method: "GET", path: "/v1/instances/{name}", tag: "instances",
		summary: "An instance",
		params: []obj{
			param("name"),
		},
		answers: []answer{
			{200, "OK", typed(wire.Instance{})},
		},
		errors: []int{401, 403, 404, 500, 503},
	},
	{
		method: "POST", path: "/v1/instances/{name}/migrate", tag: "migrations",
		summary: "An RFD 34 migration action on one instance",
		params: []obj{
			param("name"),
			{"name": "action", "in": "query", "required": true, "schema": obj{"type": "string", "enum": []string{"begin", "sync", "switch", "automatic", "abort", "pause", "rollback", "finalize", "schedule", "estimate"}}},
			{"name": "target", "in": "query", "schema": obj{"type": "string"}, "description": "target node"},
			{"name": "affinity", "in": "query", "schema": obj{"type": "array", "items": obj{"type": "string"}}, "style": "form", "explode": true},
			{"name": "scheduled_at", "in": "query", "schema": obj{"type": "string", "format": "date-time"}, "description": "RFC 3339 time"},
		},
		body: wire.MigrateBody{}, bodyRequired: false,
		answers: []answer{
			{200, "action=estimate: the estimate; action=schedule: the migration record", oneOf(wire.Estimate{}, wire.InstanceMigration{})},
			{202, "Accepted: appended to the log; the views show it shortly", typed(wire.MigrateAnswer{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "GET", path: "/v1/instances/{name}/migrate/watch", tag: "migrations",
		summary: "Watch an instance's migration: one line per phase progress, then its end",
		params: []obj{
			param("name"),
			{"name": "migration", "in": "query", "schema": obj{"type": "string"}, "description": "the migration id (default: the current or latest)"},
			param("afterSeq"),
			param("follow"),
		},
		answers: []answer{
			{200, "A stream of JSON lines, flushed as they happen", stream(wire.MigrationLine{})},
		},
		errors: []int{400, 401, 403, 404, 500, 503},
	},
	{
		method: "POST", path: "/v1/instances/{name}/start", tag: "instances",
		summary: "Start an instance",
		params: []obj{
			param("name"),
		},
		body: wire.Reason{}, bodyRequired: false,
		answers: []answer{
			{202, "Accepted: appended to the log; the views show it shortly", typed(wire.InstanceChanged{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "POST", path: "/v1/instances/{name}/stop", tag: "instances",
		summary: "Stop an instance",
		params: []obj{
			param("name"),
		},
		body: wire.Reason{}, bodyRequired: false,
		answers: []answer{
			{202, "Accepted: appended to the log; the views show it shortly", typed(wire.InstanceChanged{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "PUT", path: "/v1/instances/{name}/user-migration", tag: "instances",
		summary: "Allow or forbid its owner's migrations of this instance (null: follow the setting)",
		params: []obj{
			param("name"),
		},
		body: wire.UserMigration{}, bodyRequired: true,
		answers: []answer{
			{202, "Accepted: appended to the log; the views show it shortly", typed(wire.InstanceChanged{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "GET", path: "/v1/instances/{name}/watch", tag: "instances",
		summary: "Watch an instance's events",
		params: []obj{
			param("name"),
			param("afterSeq"),
			param("follow"),
		},
		answers: []answer{
			{200, "A stream of JSON lines, flushed as they happen", stream(wire.WatchLine{})},
		},
		errors: []int{400, 401, 403, 404, 500, 503},
	},
	{
		method: "GET", path: "/v1/jobs", tag: "requests",
		summary: "Jobs of every request",
		params: []obj{
			param("limit"),
			{"name": "after", "in": "query", "schema": obj{"type": "string"}, "description": "cursor request/index"},
			{"name": "request", "in": "query", "schema": obj{"type": "string"}, "description": "filter"},
			{"name": "status", "in": "query", "schema": obj{"type": "string", "enum": []string{"waiting", "running", "success", "error", "canceled"}}, "description": "filter"},
		},
		answers: []answer{
			{200, "OK", pageOf(typed(wire.Job{}))},
		},
		errors: []int{400, 401, 403, 500, 503},
	},
	{
		method: "GET", path: "/v1/migrations", tag: "migrations",
		summary: "Migrations: per-instance ones and bulk requests' moves (an owner sees only theirs)",
		params: []obj{
			param("limit"),
			param("after"),
			{"name": "state", "in": "query", "schema": obj{"type": "string", "enum": []string{"queued", "scheduled", "running", "paused", "successful", "failed", "aborted"}}, "description": "filter"},
			{"name": "kind", "in": "query", "schema": obj{"type": "string", "enum": []string{"instance", "opcode"}}, "description": "filter"},
			{"name": "owner", "in": "query", "schema": obj{"type": "string"}, "description": "filter"},
			{"name": "instance", "in": "query", "schema": obj{"type": "string"}, "description": "filter"},
			{"name": "node", "in": "query", "schema": obj{"type": "string"}, "description": "filter"},
		},
		answers: []answer{
			{200, "OK", pageOf(oneOf(wire.InstanceMigration{}, wire.Move{}))},
		},
		errors: []int{400, 401, 403, 500, 503},
	},
	{
		method: "GET", path: "/v1/migrations/{id}", tag: "migrations",
		summary: "A per-instance migration with its progress history (or a move of a bulk request, its id request/job/index escaped as one segment)",
		params: []obj{
			{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "migration id"},
		},
		answers: []answer{
			{200, "OK", oneOf(wire.InstanceMigration{}, wire.Move{})},
		},
		errors: []int{401, 403, 404, 500, 503},
	},
	{
		method: "GET", path: "/v1/migrations/{id}/{job}/{idx}", tag: "migrations",
		summary: "One move of a bulk request (request/job/index)",
		params: []obj{
			{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "request id"},
			{"name": "job", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "job index"},
			{"name": "idx", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "opcode index"},
		},
		answers: []answer{
			{200, "OK", typed(wire.Move{})},
		},
		errors: []int{401, 403, 404, 500, 503},
	},
	{
		method: "GET", path: "/v1/node-actions/{id}", tag: "cluster",
		summary: "A node action (undrain, offline, online) and the planner service's answer",
		params: []obj{
			{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "node action id (the 202's request)"},
		},
		answers: []answer{
			{200, "OK", typed(wire.NodeAction{})},
		},
		errors: []int{401, 403, 404, 500, 503},
	},
	{
		method: "GET", path: "/v1/nodes", tag: "cluster",
		summary: "Nodes",
		params: []obj{
			param("limit"),
			param("after"),
			{"name": "at", "in": "query", "schema": obj{"type": "string", "format": "date-time"}, "description": "point in time (RFC 3339): the list as the views stood then; 400 when malformed or in the future, 501 when the gateway has no point-in-time views"},
			{"name": "group", "in": "query", "schema": obj{"type": "string"}, "description": "filter"},
			{"name": "drained", "in": "query", "schema": obj{"type": "string", "enum": []string{"true", "false"}}, "description": "filter"},
		},
		answers: []answer{
			{200, "OK", pageOf(typed(wire.Node{}))},
		},
		errors: []int{400, 401, 403, 500, 501, 503},
	},
	{
		method: "GET", path: "/v1/nodes/{name}", tag: "cluster",
		summary: "A node",
		params: []obj{
			param("name"),
		},
		answers: []answer{
			{200, "OK", typed(wire.Node{})},
		},
		errors: []int{401, 403, 404, 500, 503},
	},
	{
		method: "POST", path: "/v1/nodes/{name}/offline", tag: "cluster",
		summary: "Declare a node offline (operators)",
		desc:    "Appends NodeActionRequested with the reason trail; the planner service answers with NodeActionEnded (GET the self link). 409 conflict: the node is already offline.",
		params: []obj{
			param("name"),
		},
		body: wire.Reason{}, bodyRequired: false,
		answers: []answer{
			{202, "Accepted: appended to the log; links.self is the node action, links.node the node", typed(wire.Accepted{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "POST", path: "/v1/nodes/{name}/online", tag: "cluster",
		summary: "Return an offline node to service (operators)",
		desc:    "Appends NodeActionRequested with the reason trail; the planner service answers with NodeActionEnded (GET the self link). 409 conflict: the node is not offline.",
		params: []obj{
			param("name"),
		},
		body: wire.Reason{}, bodyRequired: false,
		answers: []answer{
			{202, "Accepted: appended to the log; links.self is the node action, links.node the node", typed(wire.Accepted{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "POST", path: "/v1/nodes/{name}/undrain", tag: "cluster",
		summary: "Undrain a node (operators)",
		desc:    "Appends NodeActionRequested with the reason trail; the planner service answers with NodeActionEnded (GET the self link). 409 conflict: the node is not drained. 409 active_request: an active evacuation empties the node (error.request names it).",
		params: []obj{
			param("name"),
		},
		body: wire.Reason{}, bodyRequired: false,
		answers: []answer{
			{202, "Accepted: appended to the log; links.self is the node action, links.node the node", typed(wire.Accepted{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "GET", path: "/v1/openapi.json", tag: "system",
		summary: "This document",
		answers: []answer{
			{200, "The OpenAPI 3 description of the API", anyObject()},
		},
	},
	{
		method: "GET", path: "/v1/requests", tag: "requests",
		summary: "Requests, newest first",
		params: []obj{
			param("limit"),
			param("after"),
			{"name": "status", "in": "query", "schema": obj{"type": "string", "enum": []string{"accepted", "planning", "awaiting-approval", "running", "cancelling", "finished", "rejected"}}, "description": "filter"},
			{"name": "kind", "in": "query", "schema": obj{"type": "string", "enum": []string{"evacuation", "group-change"}}, "description": "filter"},
		},
		answers: []answer{
			{200, "OK", pageOf(typed(wire.Request{}))},
		},
		errors: []int{400, 401, 403, 500, 503},
	},
	{
		method: "GET", path: "/v1/requests/{id}", tag: "requests",
		summary: "A request, its plan summary, its jobs' states and its outcome",
		params: []obj{
			param("id"),
		},
		answers: []answer{
			{200, "OK", typed(wire.RequestDetail{})},
		},
		errors: []int{401, 403, 404, 500, 503},
	},
	{
		method: "POST", path: "/v1/requests/{id}/approve", tag: "requests",
		summary: "Approve a dry run's plan",
		params: []obj{
			param("id"),
		},
		body: wire.Reason{}, bodyRequired: false,
		answers: []answer{
			{202, "Accepted: appended to the log; the views show it shortly", typed(wire.Accepted{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "POST", path: "/v1/requests/{id}/cancel", tag: "requests",
		summary: "Cancel a request: jobs not started are not started",
		params: []obj{
			param("id"),
		},
		body: wire.Reason{}, bodyRequired: false,
		answers: []answer{
			{202, "Accepted: appended to the log; the views show it shortly", typed(wire.Accepted{})},
		},
		errors: []int{400, 401, 403, 404, 409, 413, 500, 503},
	},
	{
		method: "GET", path: "/v1/requests/{id}/jobs", tag: "requests",
		summary: "A request's jobs",
		params: []obj{
			param("id"),
			param("limit"),
			{"name": "after", "in": "query", "schema": obj{"type": "string"}, "description": "job index of the page before"},
			{"name": "status", "in": "query", "schema": obj{"type": "string", "enum": []string{"waiting", "running", "success", "error", "canceled"}}, "description": "filter"},
		},
		answers: []answer{
			{200, "OK", pageOf(typed(wire.Job{}))},
		},
		errors: []int{400, 401, 403, 404, 500, 503},
	},
	{
		method: "GET", path: "/v1/requests/{id}/plan", tag: "requests",
		summary: "A request's plan",
		params: []obj{
			param("id"),
		},
		answers: []answer{
			{200, "OK", typed(wire.PlanRow{})},
		},
		errors: []int{401, 403, 404, 500, 503},
	},
	{
		method: "GET", path: "/v1/requests/{id}/watch", tag: "requests",
		summary: "Watch a request: its events, history then live, until it finishes",
		params: []obj{
			param("id"),
			param("afterSeq"),
			param("follow"),
		},
		answers: []answer{
			{200, "A stream of JSON lines, flushed as they happen", stream(wire.WatchLine{})},
		},
		errors: []int{400, 401, 403, 404, 500, 503},
	},
	{
		method: "GET", path: "/v1/settings", tag: "settings",
		summary: "The migration settings",
		answers: []answer{
			{200, "OK", typed(events.SettingsChanged{})},
		},
		errors: []int{401, 403, 500, 503},
	},
	{
		method: "PUT", path: "/v1/settings", tag: "settings",
		summary: "Change settings (fields left out keep their value)",
		body:    wire.SettingsBody{}, bodyRequired: true,
		answers: []answer{
			{200, "OK", typed(events.SettingsChanged{})},
		},
		errors: []int{400, 401, 403, 413, 500, 503},
	},
}

// parameters are the parameters several routes share.
var parameters = map[string]obj{
	"limit":    {"name": "limit", "in": "query", "schema": obj{"type": "integer", "minimum": 1, "maximum": 1000}, "description": "page size"},
	"after":    {"name": "after", "in": "query", "schema": obj{"type": "string"}, "description": "cursor of the page before (the last item's key)"},
	"afterSeq": {"name": "after", "in": "query", "schema": obj{"type": "integer", "minimum": 0}, "description": "resume after this seq (every line carries its seq)"},
	"id":       {"name": "id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "request id"},
	"name":     {"name": "name", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "node or instance name"},
	"follow":   {"name": "follow", "in": "query", "schema": obj{"type": "string", "enum": []string{"true", "false"}}, "description": "false: the history only, then the stream ends"},
}

// errorResponses name the error answers by status, each the Error shape.
var errorResponses = map[int]struct{ name, desc string }{
	400: {"BadRequest", "Malformed body, path or query parameter"},
	401: {"Unauthorized", "No or unknown bearer token (tokens configured)"},
	403: {"Forbidden", "The caller's role or account may not do this (audited)"},
	404: {"NotFound", "Unknown id or name"},
	405: {"MethodNotAllowed", "Method not allowed on this path"},
	409: {"Conflict", "The state does not allow it (conflict, active_request)"},
	413: {"TooLarge", "Body too large"},
	500: {"Internal", "The gateway's fault; its log has the details"},
	501: {"NotImplemented", "This gateway does not answer that (not_implemented): ?at= without point-in-time views"},
	503: {"Unavailable", "Postgres or Kafka did not answer (unavailable, with Retry-After while the views' Postgres is unreachable), or (watch) too many streams are open"},
}

const apiDescription = "Drove moves instances between nodes. Every /v1 route needs 'Authorization: Bearer <token>' once tokens are configured; without tokens every caller is an operator named by X-Drove-Actor. Requests, jobs, nodes, groups, settings and the bulk commands are for operators; owners (tenants) see and migrate only their own instances. Every error is the ErrorAnswer shape. Lists are paged: ?limit= and ?after= the 'next' cursor."

var tags = []string{"requests", "cluster", "instances", "migrations", "settings", "history", "system", "console"}
