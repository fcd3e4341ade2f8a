package gateway_test

import (
	"net/http"
	"testing"
)

// What schemathesis found when it fuzzed the API from the OpenAPI
// document (test/e2e's TestAPIFuzzedBySchemathesis), each kept here: a
// request the document calls invalid was accepted, and the commands
// among them appended to the log.
//
//   - An enum query parameter given empty (?status=) was read as absent
//     and answered 200; the document's enum has no empty value.
//   - A body member given null ({"reason": null}) was read as absent
//     (encoding/json's way) and the command accepted: a stop, an
//     offline, the settings, an instance's user migrations. Only the
//     members the document marks nullable may be null.
//   - A string holding NUL (\u0000) in a group change's instances
//     reached Postgres, which refused it: a 500.
//   - A body of null (PUT /v1/settings with `null`) was read as an empty
//     object and answered 200.
//   - A setting beyond its view's int column (progress_timeout_seconds
//     258087847989856096) was accepted, and the projector, unable to
//     write it, stopped at that event for good; an evacuation's
//     max_moves_per_node could do the same.
func TestSchemathesisFindingsAreRefused(t *testing.T) {
	e := newBadInputEnv(t)
	for _, c := range []struct {
		method, path, body, field string
	}{
		{"GET", "/v1/jobs?status=", "", "status"},
		{"GET", "/v1/requests/r-1/jobs?status=", "", "status"},
		{"GET", "/v1/migrations?state=", "", "state"},
		{"GET", "/v1/migrations?kind=", "", "kind"},
		{"GET", "/v1/requests?kind=", "", "kind"},
		{"GET", "/v1/requests?status=", "", "status"},
		{"GET", "/v1/nodes?drained=", "", "drained"},
		{"GET", "/v1/audit?outcome=", "", "outcome"},
		{"POST", "/v1/instances/i1/stop", `{"reason": null}`, "reason"},
		{"POST", "/v1/instances/i1/start", `{"reason": null}`, "reason"},
		{"POST", "/v1/nodes/node-a1/offline", `{"reason": null}`, "reason"},
		{"POST", "/v1/nodes/node-a1/undrain", `{"reason": null}`, "reason"},
		{"PUT", "/v1/instances/i1/user-migration", `{"allowed": null, "reason": null}`, "reason"},
		{"PUT", "/v1/settings", `{"max_running_migrations_per_node": 1, "reason": null}`, "reason"},
		{"PUT", "/v1/settings", `{"send_mbps_limit": null}`, "send_mbps_limit"},
		{"POST", "/v1/evacuations", `{"nodes": ["node-a1", null], "mode": "all"}`, "nodes[1]"},
		{"POST", "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "all", "dry_run": null}`, "dry_run"},
		{"POST", "/v1/group-changes", `{"instances": null}`, "instances"},
		{"PUT", "/v1/settings", `null`, "body"},
		{"PUT", "/v1/settings", `{"progress_timeout_seconds": 258087847989856096}`, "progress_timeout_seconds"},
		{"PUT", "/v1/settings", `{"resync_max_syncs": 2147483648}`, "resync_max_syncs"},
		{"POST", "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "all", "max_moves_per_node": 2147483648}`, "max_moves_per_node"},
		{"POST", "/v1/instances/i1/stop", `null`, "body"},
		{"POST", "/v1/evacuations", ` null `, "body"},
		{"POST", "/v1/group-changes", `{"instances": ["i1", "x\u0000y"], "dry_run": true}`, "instances[1]"},
		{"POST", "/v1/evacuations", `{"nodes": ["node-a1"], "mode": "all", "reason": "\u0000"}`, "reason"},
		{"POST", "/v1/instances/i1/migrate?action=estimate", `{"affinity": ["node-a2", null]}`, "affinity[1]"},
	} {
		before := e.logEnd(t)
		status, body := e.do(c.method, c.path, c.body, "Content-Type", "application/json")
		if status != http.StatusBadRequest {
			t.Errorf("%s %s %s = %d %s, want 400", c.method, c.path, c.body, status, body)
			continue
		}
		if got := decodeError(t, body).Error.Field; got != c.field {
			t.Errorf("%s %s %s: the error names %q, want %q", c.method, c.path, c.body, got, c.field)
		}
		if after := e.logEnd(t); after != before {
			t.Errorf("%s %s %s: refused but appended %d records", c.method, c.path, c.body, after-before)
		}
	}

	// Null stays a value where the document says so: the instance's
	// override cleared, a group change's targets left to the planner.
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/v1/instances/i1/user-migration", `{"allowed": null}`},
		{"POST", "/v1/group-changes", `{"instances": ["i1"], "target_groups": null}`},
	} {
		if status, body := e.do(c.method, c.path, c.body, "Content-Type", "application/json"); status != http.StatusAccepted {
			t.Errorf("%s %s %s = %d %s, want 202", c.method, c.path, c.body, status, body)
		}
	}
}
