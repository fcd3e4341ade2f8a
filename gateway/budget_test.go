package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// A first move is predicted from its parts, not as 20 s: zfs-local's
// stated overhead (155 ms) + the final delta at 100 MiB/s, 2 ms + its
// checksum at 200 MiB/s, 1 ms. The final delta follows the re-sync rule:
// the 2 GiB instance's full send at the assumed 100 MiB/s dirties 20.48
// MiB at the assumed 1 MiB/s, which a re-sync sends in 205 ms, during
// which 0.2 MiB more are dirtied. The estimate names each part and the
// budget asked.
func TestEstimateFromParts(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.instanceRow("z1", "acct-1", nil)
	var est wire.Estimate
	code, body := e.do("POST", "/v1/instances/z1/migrate?action=estimate&max_downtime_ms=2000", "")
	if code != 200 || json.Unmarshal(body, &est) != nil {
		t.Fatalf("estimate: %d %s", code, body)
	}
	p := est.Downtime
	if est.DowntimeSeconds != 0.158 || p.OverheadMS != 155 || p.TransferMS != 2 || p.ChecksumMS != 1 || est.Syncs != 2 || est.MaxDowntimeMS != 2000 {
		t.Fatalf("estimate %.3f s from %+v in %d syncs, budget %d ms; want 0.158 s = 155 + 2 + 1 ms in 2 syncs, budget 2000 ms",
			est.DowntimeSeconds, p, est.Syncs, est.MaxDowntimeMS)
	}
	for _, part := range []string{"155 ms stop and start", "final delta of 209.7 KiB at 100.0 MiB/s", "checksum of it at 200.0 MiB/s",
		"overhead: no switch measured yet: 155 ms assumed"} {
		if !strings.Contains(est.How, part) {
			t.Errorf("how %q does not say %q", est.How, part)
		}
	}
}

// A send cap under a byte a second (schemathesis set one) still gives an
// estimate, in JSON: the link was taken as 0 and the estimate's figures
// were infinite, which JSON cannot carry, and the answer was a 200 with
// an empty body.
func TestEstimateUnderATinySendCap(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.instanceRow("z1", "acct-1", nil)
	s := events.DefaultSettings()
	s.SendMbpsLimit = 1e-9
	e.settings(s)
	var est wire.Estimate
	code, body := e.do("POST", "/v1/instances/z1/migrate?action=estimate", "")
	if code != 200 || json.Unmarshal(body, &est) != nil || est.LinkBytesPerS != 1 {
		t.Fatalf("estimate under a tiny cap: %d %q; want 200 with a link of 1 byte/s", code, body)
	}
}

// A budget is asked with a new migration: a bad or negative one is a
// 400, one below the switch's overhead alone (which no sync shrinks) a
// 409 naming both figures, whether asked or the settings'; nothing is
// appended. An accepted migration carries its budget and the prediction
// the coordinator predicts again from.
func TestMigrateBudget(t *testing.T) {
	e := newEnv(t)
	e.seed()
	seedMigrationStates(e)
	e.instanceRow("z1", "acct-1", nil)
	for _, tc := range []struct {
		name, path, body string
		status           int
		code, want       string
	}{
		{"negative", "/v1/instances/z1/migrate?action=automatic&max_downtime_ms=-5", "", 400, "bad_request", "max_downtime_ms: -5 is negative"},
		{"negative in the body", "/v1/instances/z1/migrate?action=begin", `{"max_downtime_ms": -1}`, 400, "bad_request", "-1 is negative"},
		{"not a number", "/v1/instances/z1/migrate?action=automatic&max_downtime_ms=1s", "", 400, "bad_request", "not a whole number"},
		{"on a migration begun", "/v1/instances/begun/migrate?action=sync&max_downtime_ms=500", "", 400, "bad_request", "asked with the migration"},
		{"below the overhead", "/v1/instances/z1/migrate?action=automatic&max_downtime_ms=100", "", 409, "over_budget",
			"the downtime budget of 100 ms (max_downtime_ms asked) is below the overhead of z1's switch alone, 155 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.do(http.MethodPost, tc.path, tc.body, "Content-Type", "application/json")
			eb := decodeError(t, body)
			if status != tc.status || eb.Error.Code != tc.code || eb.Error.Field != "max_downtime_ms" || !strings.Contains(eb.Error.Message, tc.want) {
				t.Fatalf("%d %+v; want %d %s on max_downtime_ms saying %q", status, eb.Error, tc.status, tc.code, tc.want)
			}
		})
	}
	if n := len(e.topic(events.TopicMigrations)); n != 0 {
		t.Fatalf("refused budgets appended %d events", n)
	}

	s := events.DefaultSettings()
	s.MaxDowntimeMS = 150
	e.settings(s)
	status, body := e.do(http.MethodPost, "/v1/instances/z1/migrate?action=automatic", "")
	if eb := decodeError(t, body); status != 409 || !strings.Contains(eb.Error.Message, "budget of 150 ms (the settings' max_downtime_ms)") {
		t.Fatalf("under the settings' budget: %d %s", status, body)
	}
	// The request's budget is the instance's override of the settings'.
	if status, body := e.do(http.MethodPost, "/v1/instances/z1/migrate?action=automatic", `{"max_downtime_ms": 5000}`); status != 202 {
		t.Fatalf("automatic with a budget: %d %s", status, body)
	}
	recs := e.topic(events.TopicMigrations)
	if len(recs) != 1 {
		t.Fatalf("%d events appended, want 1", len(recs))
	}
	a := as[events.MigrationActionRequested](t, recs[0].Event)
	if b := a.Downtime; a.MaxDowntimeMS != 5000 || b == nil || b.OverheadMS != 155 || b.PredictedMS != 158 ||
		b.LinkBytesPerSecond != 100<<20 || b.ChecksumBytesPerSecond != 200<<20 {
		t.Fatalf("appended budget %d ms, prediction %+v; want 5000 ms and the estimate's parts", a.MaxDowntimeMS, b)
	}
}

// An instance's own budget is set with PUT .../max-downtime: bad input is
// a 400 naming the member and an unknown instance a 404, both appending
// nothing; a good one restates the instance with its budget (0 follows
// the settings'), and the instance's answer shows it once folded.
func TestInstanceBudgetSet(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.instanceRow("z1", "acct-1", nil)
	for _, tc := range []struct{ name, path, body, field, want string }{
		{"missing", "/v1/instances/z1/max-downtime", `{}`, "max_downtime_ms", "missing"},
		{"negative", "/v1/instances/z1/max-downtime", `{"max_downtime_ms": -1}`, "max_downtime_ms", "-1 is negative"},
		{"over a view's int", "/v1/instances/z1/max-downtime", `{"max_downtime_ms": 2147483648}`, "max_downtime_ms", "above 2147483647"},
		{"not a number", "/v1/instances/z1/max-downtime", `{"max_downtime_ms": "500"}`, "max_downtime_ms", ""},
		{"a fraction", "/v1/instances/z1/max-downtime", `{"max_downtime_ms": 1.5}`, "max_downtime_ms", ""},
		{"null", "/v1/instances/z1/max-downtime", `{"max_downtime_ms": null}`, "max_downtime_ms", ""},
		{"unknown member", "/v1/instances/z1/max-downtime", `{"max_downtime_ms": 5, "budget": 1}`, "budget", "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.do(http.MethodPut, tc.path, tc.body)
			eb := decodeError(t, body)
			if status != 400 || eb.Error.Field != tc.field || !strings.Contains(eb.Error.Message, tc.want) {
				t.Fatalf("%d %+v; want 400 on %s saying %q", status, eb.Error, tc.field, tc.want)
			}
		})
	}
	if status, body := e.do(http.MethodPut, "/v1/instances/nope/max-downtime", `{"max_downtime_ms": 5}`); status != 404 {
		t.Fatalf("unknown instance: %d %s", status, body)
	}
	if n := len(e.topic(events.TopicInventory)); n != 0 {
		t.Fatalf("refused budgets appended %d events", n)
	}

	status, body := e.do(http.MethodPut, "/v1/instances/z1/max-downtime", `{"max_downtime_ms": 450, "reason": "tenant's SLA"}`)
	var ans wire.InstanceChanged
	if status != 202 || json.Unmarshal(body, &ans) != nil || ans.MaxDowntimeMS != 450 || ans.Message != "tenant's SLA" {
		t.Fatalf("set: %d %s", status, body)
	}
	recs := e.topic(events.TopicInventory)
	if len(recs) != 1 {
		t.Fatalf("%d inventory events, want 1", len(recs))
	}
	d := as[events.InstanceDeclared](t, recs[0].Event)
	if d.Name != "z1" || d.MaxDowntimeMS != 450 || d.Storage != events.StorageZFSLocal || d.PrimaryNode != "node-a1" {
		t.Fatalf("restated %+v", d)
	}
	e.foldBudget(d)
	var in wire.Instance
	if e.get("/v1/instances/z1", &in); in.MaxDowntimeMS != 450 {
		t.Fatalf("GET instance: budget %d ms, want 450", in.MaxDowntimeMS)
	}
	// 0 follows the settings' again; the next restatement keeps the rest.
	if status, body := e.do(http.MethodPut, "/v1/instances/z1/max-downtime", `{"max_downtime_ms": 0}`); status != 202 {
		t.Fatalf("clear: %d %s", status, body)
	}
	recs = e.topic(events.TopicInventory)
	if d := as[events.InstanceDeclared](t, recs[len(recs)-1].Event); d.MaxDowntimeMS != 0 || !strings.Contains(recs[len(recs)-1].Event.Reason.Why, "follows the settings'") {
		t.Fatalf("cleared %+v (%q)", d, recs[len(recs)-1].Event.Reason.Why)
	}
}

// An owner may set its own instance's budget, not another's; a stop or
// start restates the instance with the budget it has.
func TestInstanceBudgetOwners(t *testing.T) {
	e := newEnv(t, withTokens)
	e.seed()
	e.instanceRow("z1", "acct-1", nil)
	e.exec(`UPDATE instances SET max_downtime_ms = 450 WHERE name = 'z1'`)
	if status, body := e.do(http.MethodPut, "/v1/instances/z1/max-downtime", `{"max_downtime_ms": 300}`, bearer(acct2Token)...); status != 403 {
		t.Fatalf("another owner: %d %s", status, body)
	}
	if status, body := e.do(http.MethodPut, "/v1/instances/z1/max-downtime", `{"max_downtime_ms": 300}`, bearer(acct1Token)...); status != 202 {
		t.Fatalf("its owner: %d %s", status, body)
	}
	if status, body := e.do(http.MethodPost, "/v1/instances/z1/stop", "", bearer(acct1Token)...); status != 202 {
		t.Fatalf("stop: %d %s", status, body)
	}
	recs := e.topic(events.TopicInventory)
	if len(recs) != 2 {
		t.Fatalf("%d inventory events, want 2", len(recs))
	}
	if d := as[events.InstanceDeclared](t, recs[1].Event); d.MaxDowntimeMS != 450 || d.RunState != events.RunStopped {
		t.Fatalf("the stop restated %+v; want the views' budget, 450 ms", d)
	}
}

// The budget in force is the request's, else the instance's own, else
// the settings'; the refusal of one below the overhead names which.
func TestInstanceBudgetPrecedence(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.instanceRow("z1", "acct-1", nil)
	s := events.DefaultSettings()
	s.MaxDowntimeMS = 150 // below z1's 155 ms overhead
	e.settings(s)
	estimated := func(query string) int64 {
		t.Helper()
		var est wire.Estimate
		code, body := e.do(http.MethodPost, "/v1/instances/z1/migrate?action=estimate"+query, "")
		if code != 200 || json.Unmarshal(body, &est) != nil {
			t.Fatalf("estimate: %d %s", code, body)
		}
		return est.MaxDowntimeMS
	}
	if got := estimated(""); got != 150 {
		t.Fatalf("budget %d ms, want the settings' 150", got)
	}
	e.exec(`UPDATE instances SET max_downtime_ms = 5000 WHERE name = 'z1'`)
	if got, asked := estimated(""), estimated("&max_downtime_ms=2000"); got != 5000 || asked != 2000 {
		t.Fatalf("budgets %d and %d ms, want the instance's 5000 and the asked 2000", got, asked)
	}
	// The instance's 5000 ms lets through what the settings' refused.
	if status, body := e.do(http.MethodPost, "/v1/instances/z1/migrate?action=automatic", ""); status != 202 {
		t.Fatalf("automatic under the instance's budget: %d %s", status, body)
	}
	recs := e.topic(events.TopicMigrations)
	if a := as[events.MigrationActionRequested](t, recs[0].Event); len(recs) != 1 || a.MaxDowntimeMS != 0 {
		t.Fatalf("appended %d events, budget asked %d ms; want 1 asking none (the coordinator reads the instance's)", len(recs), a.MaxDowntimeMS)
	}

	e.instanceRow("z2", "acct-1", nil)
	e.exec(`UPDATE instances SET max_downtime_ms = 100 WHERE name = 'z2'`)
	status, body := e.do(http.MethodPost, "/v1/instances/z2/migrate?action=automatic", "")
	if eb := decodeError(t, body); status != 409 || eb.Error.Code != "over_budget" ||
		!strings.Contains(eb.Error.Message, "budget of 100 ms (z2's own max_downtime_ms)") {
		t.Fatalf("under the instance's budget: %d %s", status, body)
	}
	if n := len(e.topic(events.TopicMigrations)); n != 1 {
		t.Fatalf("the refusal appended: %d events", n)
	}
	if status, body := e.do(http.MethodPost, "/v1/instances/z2/migrate?action=automatic&max_downtime_ms=900", ""); status != 202 {
		t.Fatalf("asked over the instance's: %d %s", status, body)
	}
}

// foldBudget writes d's budget into the instances view as the projector
// folds InstanceDeclared.
func (e *env) foldBudget(d events.InstanceDeclared) {
	e.t.Helper()
	e.exec(`UPDATE instances SET max_downtime_ms = $2 WHERE name = $1`, d.Name, d.MaxDowntimeMS)
}
