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
// stated overhead (200 ms) + the final delta (the 2 GiB instance's
// 20.48 MiB, dirtied at the assumed 1 MiB/s while its full send ran at
// the assumed 100 MiB/s) at 100 MiB/s, 205 ms + its checksum at 200
// MiB/s, 102 ms. The estimate names each part and the budget asked.
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
	if est.DowntimeSeconds != 0.507 || p.OverheadMS != 200 || p.TransferMS != 204 || p.ChecksumMS != 102 || est.MaxDowntimeMS != 2000 {
		t.Fatalf("estimate %.3f s from %+v, budget %d ms; want 0.507 s = 200 + 204 + 102 ms, budget 2000 ms", est.DowntimeSeconds, p, est.MaxDowntimeMS)
	}
	for _, part := range []string{"200 ms stop and start", "final delta of 20.5 MiB at 100.0 MiB/s", "checksum of it at 200.0 MiB/s",
		"overhead: no switch measured yet: 200 ms assumed"} {
		if !strings.Contains(est.How, part) {
			t.Errorf("how %q does not say %q", est.How, part)
		}
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
			"the downtime budget of 100 ms (max_downtime_ms asked) is below the overhead of z1's switch alone, 200 ms"},
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
	if b := a.Downtime; a.MaxDowntimeMS != 5000 || b == nil || b.OverheadMS != 200 || b.PredictedMS != 507 ||
		b.LinkBytesPerSecond != 100<<20 || b.ChecksumBytesPerSecond != 200<<20 {
		t.Fatalf("appended budget %d ms, prediction %+v; want 5000 ms and the estimate's parts", a.MaxDowntimeMS, b)
	}
}
