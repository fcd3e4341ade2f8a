package gateway_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/gateway/wire"
)

const (
	opToken    = "tok-op"
	acct1Token = "tok-a1"
	acct2Token = "tok-a2"
)

func withTokens(cfg *gateway.Config) {
	cfg.Tokens = map[string]gateway.Account{
		opToken:    {Name: "ops", Role: events.RoleOperator},
		acct1Token: {Name: "acct-1", Role: events.RoleOwner},
		acct2Token: {Name: "acct-2", Role: events.RoleOwner},
	}
	cfg.DryRunWait = 50 * time.Millisecond
	// These tests count one audit record per refusal; the budget that
	// folds floods is tested on its own (TestBadTokenFloodIsAuditedWithinABound).
	cfg.RefusalAuditBurst = 1000
}

func bearer(tok string) []string {
	if tok == "" {
		return []string{"Content-Type", "application/json"}
	}
	return []string{"Authorization", "Bearer " + tok, "Content-Type", "application/json"}
}

// instanceRow adds a zfs-local instance (movable by a per-instance
// migration) with its owner and user-migration override.
func (e *env) instanceRow(name, owner string, userMigration *bool) {
	e.t.Helper()
	e.exec(`INSERT INTO instances (name, owner, memory_mib, vcpus, disk_mib, storage, run_state,
  group_name, primary_node, user_migration, updated_at) VALUES ($1, $2, 1024, 1, 2048, 'zfs-local', 'running', 'g1', 'node-a1', $3, now())`,
		name, owner, userMigration)
}

// record writes a migration record as the projector folds the
// coordinator's MigrationStateChanged.
func (e *env) record(r events.MigrationStateChanged) {
	e.t.Helper()
	if r.Source == "" {
		r.Source = "node-a1"
	}
	e.exec(`INSERT INTO moves (id, request, job, idx, kind, instance, account, role, source_node, target_node,
  automatic, record_state, queued, phase, syncs, switched, finalized, phase_running, message, created_at, updated_at,
  downtime_ms, workload_downtime_ms, predicted_downtime_ms, max_downtime_ms)
  VALUES ($1, $1, 0, 0, 'instance', $2, $3, $4, $5, $6, $7, $8, $8 = 'queued', $9, $10, $11, $12, $13, $14, now(), now(), $15, $16, $17, $18)`,
		r.Migration, r.Instance, r.Account, string(r.Role), r.Source, r.Target, r.Automatic, string(r.State),
		r.Phase, r.Syncs, r.Switched, r.Finalized, r.PhaseRunning, r.Message, r.DowntimeMS, r.WorkloadDowntimeMS,
		r.PredictedDowntimeMS, r.MaxDowntimeMS)
}

// settings writes the settings row as the projector folds SettingsChanged.
func (e *env) settings(s events.SettingsChanged) {
	e.t.Helper()
	e.exec(`INSERT INTO settings (key, allow_user_migrations, max_running_migrations_per_node, send_mbps_limit,
  resync_max_bytes, resync_max_syncs, resync_shrink_window, progress_timeout_seconds, finalize_grace_seconds, updated_at,
  max_downtime_ms)
  VALUES ('settings', $1, $2, $3, $4, $5, $6, $7, $8, clock_timestamp(), $9)
  ON CONFLICT (key) DO UPDATE SET allow_user_migrations = EXCLUDED.allow_user_migrations, updated_at = EXCLUDED.updated_at,
    max_downtime_ms = EXCLUDED.max_downtime_ms`,
		s.AllowUserMigrations, s.MaxRunningMigrationsPerNode, s.SendMbpsLimit, s.ResyncMaxBytes, s.ResyncMaxSyncs,
		s.ResyncShrinkWindow, s.ProgressTimeoutSeconds, s.FinalizeGraceSeconds, s.MaxDowntimeMS)
}

// topic reads every committed event of a topic.
func (e *env) topic(name string) []kafka.Record {
	e.t.Helper()
	recs, err := kafka.ReadAll(e.ctx, e.kafka, name)
	if err != nil && !errors.Is(err, kafka.ErrUnknownTopic) {
		e.t.Fatalf("read %s: %v", name, err)
	}
	return recs
}

func TestMigrateValidationAppendsNothing(t *testing.T) {
	e := newEnv(t)
	e.seed()
	seedMigrationStates(e)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)

	cases := []struct {
		name, path, body string
		status           int
		field, want      string
	}{
		{"unknown instance", "/v1/instances/nope/migrate?action=begin", "", 404, "name", `"nope"`},
		{"no action", "/v1/instances/fresh/migrate", "", 400, "action", "begin, sync, switch"},
		{"unknown action", "/v1/instances/fresh/migrate?action=teleport", "", 400, "action", "begin, sync, switch, automatic, abort, pause, rollback, finalize, schedule, estimate"},
		{"sync before begin", "/v1/instances/fresh/migrate?action=sync", "", 409, "action", "action=begin"},
		{"switch before begin", "/v1/instances/fresh/migrate?action=switch", "", 409, "action", "no migration in progress"},
		{"switch before any sync", "/v1/instances/begun/migrate?action=switch", "", 409, "action", "switch needs at least one completed sync"},
		{"pause outside sync", "/v1/instances/begun/migrate?action=pause", "", 409, "action", "only possible during a sync"},
		{"pause without migration", "/v1/instances/fresh/migrate?action=pause", "", 409, "action", "no migration"},
		{"sync while syncing", "/v1/instances/syncing/migrate?action=sync", "", 409, "action", "running"},
		{"sync while a pause stops the send", "/v1/instances/pausing/migrate?action=sync", "", 409, "action", "still under way (pausing: stopping sync 2)"},
		{"switch while a pause stops the send", "/v1/instances/pausing/migrate?action=switch", "", 409, "action", "still under way"},
		{"abort after switch", "/v1/instances/switched/migrate?action=abort", "", 409, "action", "rollback"},
		{"rollback before switch", "/v1/instances/begun/migrate?action=rollback", "", 409, "action", "abort it instead"},
		{"finalize ended", "/v1/instances/done/migrate?action=finalize", "", 409, "action", "no migration in progress"},
		{"second migration", "/v1/instances/syncing/migrate?action=begin", "", 409, "name", "m-sync"},
		{"second automatic", "/v1/instances/switched/migrate?action=automatic", "", 409, "name", "m-sw"},
		{"stop while migrating", "/v1/instances/syncing/stop", "", 409, "name", "m-sync"},
		{"start while migrating", "/v1/instances/begun/start", "", 409, "name", "m-begun"},
		{"mirrored storage", "/v1/instances/i1/migrate?action=begin", "", 409, "action", "evacuation"},
		{"target is the source", "/v1/instances/fresh/migrate?action=begin&target=node-a1", "", 400, "target", "runs now"},
		{"unknown target", "/v1/instances/fresh/migrate?action=begin", `{"target": "node-zz"}`, 404, "target", "node-zz"},
		{"schedule without time", "/v1/instances/fresh/migrate?action=schedule", "", 400, "scheduled_at", "missing"},
		{"schedule in the past", "/v1/instances/fresh/migrate?action=schedule&scheduled_at=2001-01-01T00:00:00Z", "", 400, "scheduled_at", "future"},
		{"schedule bad time", "/v1/instances/fresh/migrate?action=schedule", `{"scheduled_at": "tomorrow"}`, 400, "scheduled_at", "RFC 3339"},
		{"unknown body field", "/v1/instances/fresh/migrate?action=begin", `{"node": "node-a2"}`, 400, "node", "unknown field"},
		{"stop stopped", "/v1/instances/fresh/start", "", 409, "name", "already running"},
		{"reschedule switched", "/v1/instances/switched/migrate?action=schedule&scheduled_at=" + future, "", 409, "action", "switched"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.do(http.MethodPost, tc.path, tc.body, "Content-Type", "application/json")
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			eb := decodeError(t, body)
			if eb.Error.Field != tc.field || !strings.Contains(eb.Error.Message, tc.want) {
				t.Fatalf("error %+v, want field %q and %q in the message", eb.Error, tc.field, tc.want)
			}
		})
	}
	for _, topic := range []string{events.TopicMigrations, events.TopicInventory, events.TopicAudit} {
		if recs := e.topic(topic); len(recs) != 0 {
			t.Fatalf("refused commands appended %d events to %s", len(recs), topic)
		}
	}

	checkBeginAcceptedOnce(t, e)
}

// seedMigrationStates records an instance in each state a migration command
// is judged against: none yet, begun, syncing, pausing, switched and ended.
func seedMigrationStates(e *env) {
	e.instanceRow("fresh", "acct-1", nil)
	e.instanceRow("begun", "acct-1", nil)
	e.record(events.MigrationStateChanged{Migration: "m-begun", Instance: "begun", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationPaused, Phase: events.PhaseBegin})
	e.instanceRow("syncing", "acct-1", nil)
	e.record(events.MigrationStateChanged{Migration: "m-sync", Instance: "syncing", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationRunning, Phase: events.PhaseSync, Syncs: 1})
	e.instanceRow("pausing", "acct-1", nil)
	e.record(events.MigrationStateChanged{Migration: "m-pause", Instance: "pausing", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationPaused, Phase: events.PhaseSync, Syncs: 1, PhaseRunning: true,
		Message: "pausing: stopping sync 2"})
	e.instanceRow("switched", "acct-1", nil)
	e.record(events.MigrationStateChanged{Migration: "m-sw", Instance: "switched", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationSuccessful, Phase: events.PhaseSwitch, Syncs: 2, Switched: true})
	e.instanceRow("done", "acct-1", nil)
	e.record(events.MigrationStateChanged{Migration: "m-done", Instance: "done", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationAborted, Phase: "abort"})
}

// checkBeginAcceptedOnce begins a migration of "fresh" and checks a second
// begin is refused, then that "pausing" syncs once its pause has ended.
func checkBeginAcceptedOnce(t *testing.T, e *env) {
	// The same instance, accepted: one event each, and a quick second
	// begin is refused before the views show the first.
	status, body := e.do(http.MethodPost, "/v1/instances/fresh/migrate?action=begin", `{"target": "node-a2"}`)
	if status != http.StatusAccepted {
		t.Fatalf("begin = %d %s", status, body)
	}
	var ans struct{ Migration string }
	if err := json.Unmarshal(body, &ans); err != nil || ans.Migration == "" {
		t.Fatalf("begin answer %s", body)
	}
	status, body = e.do(http.MethodPost, "/v1/instances/fresh/migrate?action=automatic", "")
	if status != http.StatusConflict || !strings.Contains(string(body), ans.Migration) {
		t.Fatalf("second begin = %d %s, want 409 naming %s", status, body, ans.Migration)
	}
	recs := e.topic(events.TopicMigrations)
	if len(recs) != 1 {
		t.Fatalf("%d events appended, want 1", len(recs))
	}
	a := as[events.MigrationActionRequested](t, recs[0].Event)
	if a.Migration != ans.Migration || a.Action != events.ActionBegin || a.Target != "node-a2" || a.Role != events.RoleOperator {
		t.Fatalf("appended %+v", a)
	}

	// Once the record says the pause has ended, the sync is accepted.
	e.exec(`UPDATE moves SET phase_running = false, message = 'sync 2 stopped' WHERE id = 'm-pause'`)
	if status, body := e.do(http.MethodPost, "/v1/instances/pausing/migrate?action=sync", ""); status != http.StatusAccepted {
		t.Fatalf("sync after the pause ended = %d %s", status, body)
	}
	if recs := e.topic(events.TopicMigrations); len(recs) != 2 {
		t.Fatalf("%d events appended, want 2", len(recs))
	}
}

func TestAuthRefusalsAreAudited(t *testing.T) {
	e := newEnv(t, withTokens)
	e.seed()
	cases := []struct {
		name, method, path, token string
		status                    int
		code                      string
	}{
		{"no token", "GET", "/v1/instances", "", 401, "unauthorized"},
		{"unknown token", "GET", "/v1/instances", "nope", 401, "unauthorized"},
		{"tenant evacuates", "POST", "/v1/evacuations", acct1Token, 403, "forbidden"},
		{"tenant reads requests", "GET", "/v1/requests", acct1Token, 403, "forbidden"},
		{"tenant reads settings", "GET", "/v1/settings", acct1Token, 403, "forbidden"},
		{"tenant reads another's instance", "GET", "/v1/instances/i2", acct1Token, 403, "forbidden"},
		{"tenant lists another's instances", "GET", "/v1/instances?owner=acct-2", acct1Token, 403, "forbidden"},
		{"tenant stops another's instance", "POST", "/v1/instances/i2/stop", acct1Token, 403, "forbidden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := ""
			if tc.path == "/v1/evacuations" {
				b = `{"nodes": ["node-a1"], "mode": "all"}`
			}
			status, body := e.do(tc.method, tc.path, b, bearer(tc.token)...)
			if status != tc.status || decodeError(t, body).Error.Code != tc.code {
				t.Fatalf("%s %s = %d %s, want %d %s", tc.method, tc.path, status, body, tc.status, tc.code)
			}
		})
	}
	recs := e.topic(events.TopicAudit)
	if len(recs) != len(cases) {
		t.Fatalf("%d audit events, want %d", len(recs), len(cases))
	}
	first := as[events.AuditRecorded](t, recs[0].Event)
	if first.Outcome != events.AuditDenied || !strings.Contains(first.Action, "/v1/instances") || first.Detail == "" {
		t.Fatalf("audit %+v", first)
	}
	third := as[events.AuditRecorded](t, recs[2].Event)
	if !strings.Contains(third.Subject, "acct-1") || recs[2].Event.Reason.Actor != "acct-1" {
		t.Fatalf("audit %+v by %q, want acct-1", third, recs[2].Event.Reason.Actor)
	}
	if n := len(e.appended()); n != 0 {
		t.Fatalf("refused requests appended %d events", n)
	}

	// Owners see only their own instances; operators everything.
	var list struct{ Items []wire.Instance }
	status, body := e.do("GET", "/v1/instances", "", bearer(acct1Token)...)
	if status != 200 || json.Unmarshal(body, &list) != nil || len(list.Items) != 2 {
		t.Fatalf("tenant list = %d %s", status, body)
	}
	for _, in := range list.Items {
		if in.Owner != "acct-1" {
			t.Fatalf("tenant sees %+v", in)
		}
	}
	if status, _ := e.do("GET", "/v1/nodes", "", bearer(opToken)...); status != 200 {
		t.Fatalf("operator nodes = %d", status)
	}
}

// TestPermissionMatrix runs every action as every kind of caller.
func TestPermissionMatrix(t *testing.T) {
	e := newEnv(t, withTokens)
	e.seed()
	yes := true
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	// Expected status of each action on an instance with no migration, for
	// a caller who may migrate it.
	allowed := map[string]int{"begin": 202, "automatic": 202, "schedule": 200, "estimate": 200,
		"sync": 409, "switch": 409, "abort": 409, "pause": 409, "rollback": 409, "finalize": 409}
	callers := []struct {
		name, token, owner string
		override           *bool
		globalAllow        bool
		may                bool
		status             int // when it may not
	}{
		{"operator", opToken, "acct-9", nil, false, true, 0},
		{"owner, allowed globally", acct1Token, "acct-1", nil, true, true, 0},
		{"owner, denied globally, allowed on the instance", acct1Token, "acct-1", &yes, false, true, 0},
		{"owner, denied globally", acct1Token, "acct-1", nil, false, false, 403},
		{"owner of another instance", acct2Token, "acct-1", nil, true, false, 403},
		{"no token", "", "acct-1", nil, true, false, 401},
	}
	for ci, who := range callers {
		s := events.DefaultSettings()
		s.AllowUserMigrations = who.globalAllow
		e.settings(s)
		for action, want := range allowed {
			name := fmt.Sprintf("x%d-%s", ci, action)
			e.instanceRow(name, who.owner, who.override)
			if !who.may {
				want = who.status
			}
			path := "/v1/instances/" + name + "/migrate?action=" + action
			if action == "schedule" {
				path += "&scheduled_at=" + future
			}
			status, body := e.do(http.MethodPost, path, "", bearer(who.token)...)
			if status != want {
				t.Errorf("%s: %s = %d %s, want %d", who.name, action, status, body, want)
			}
		}
	}
	// A tenant may not pause or abort an operator's migration, even of
	// their own instance where user migrations are allowed.
	e.instanceRow("ops-mig", "acct-1", &yes)
	e.record(events.MigrationStateChanged{Migration: "m-ops", Instance: "ops-mig", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationRunning, Phase: events.PhaseSync})
	for _, action := range []string{"pause", "abort"} {
		status, body := e.do(http.MethodPost, "/v1/instances/ops-mig/migrate?action="+action, "", bearer(acct1Token)...)
		if status != 403 || !strings.Contains(string(body), "operator") {
			t.Errorf("tenant %s of an operator's migration = %d %s", action, status, body)
		}
	}
	if status, body := e.do(http.MethodPost, "/v1/instances/ops-mig/migrate?action=pause", "", bearer(opToken)...); status != 202 {
		t.Errorf("operator pause = %d %s", status, body)
	}
	// Every refusal was audited, every acceptance appended once.
	denied := 0
	for _, who := range callers {
		if !who.may {
			denied += len(allowed)
		}
	}
	if got := len(e.topic(events.TopicAudit)); got != denied+2 {
		t.Errorf("%d audit events, want %d", got, denied+2)
	}
	accepted := 0
	for _, who := range callers {
		if who.may {
			accepted += 3 // begin, automatic, schedule; estimate appends nothing
		}
	}
	if got := len(e.topic(events.TopicMigrations)); got != accepted+1 {
		t.Errorf("%d migration events, want %d", got, accepted+1)
	}
}

func TestSettings(t *testing.T) {
	e := newEnv(t, withTokens)
	var s events.SettingsChanged
	status, body := e.do("GET", "/v1/settings", "", bearer(opToken)...)
	if status != 200 || json.Unmarshal(body, &s) != nil || s != events.DefaultSettings() {
		t.Fatalf("GET settings = %d %s, want the defaults", status, body)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"max_running_migrations_per_node": 0}`, "max_running_migrations_per_node"},
		{`{"send_mbps_limit": -1}`, "send_mbps_limit"},
		{`{"resync_max_syncs": 0}`, "resync_max_syncs"},
		{`{"resync_shrink_window": 0}`, "resync_shrink_window"},
		{`{"progress_timeout_seconds": 0}`, "progress_timeout_seconds"},
		{`{"finalize_grace_seconds": -5}`, "finalize_grace_seconds"},
		{`{"resync_max_bytes": -1}`, "resync_max_bytes"},
		{`{"max_downtime_ms": -1}`, "max_downtime_ms"},
		{`{"allow_user_migrations": "yes"}`, "allow_user_migrations"},
		{`{"max_users": 3}`, "max_users"},
		{``, "body"},
	} {
		status, body := e.do("PUT", "/v1/settings", tc.body, bearer(opToken)...)
		if status != 400 || decodeError(t, body).Error.Field != tc.field {
			t.Errorf("PUT %s = %d %s, want 400 naming %s", tc.body, status, body, tc.field)
		}
	}
	if status, _ := e.do("PUT", "/v1/settings", `{"allow_user_migrations": true}`, bearer(acct1Token)...); status != 403 {
		t.Errorf("tenant PUT settings = %d", status)
	}
	if n := len(e.topic(events.TopicSettings)); n != 0 {
		t.Fatalf("refused settings appended %d events", n)
	}
	// Two partial changes in a row merge, even before the views show the
	// first.
	for _, b := range []string{`{"allow_user_migrations": true}`, `{"max_running_migrations_per_node": 1, "send_mbps_limit": 80, "max_downtime_ms": 500}`} {
		if status, body := e.do("PUT", "/v1/settings", b, bearer(opToken)...); status != 200 {
			t.Fatalf("PUT %s = %d %s", b, status, body)
		}
	}
	recs := e.topic(events.TopicSettings)
	if len(recs) != 2 {
		t.Fatalf("%d settings events, want 2", len(recs))
	}
	last := as[events.SettingsChanged](t, recs[1].Event)
	want := events.DefaultSettings()
	want.AllowUserMigrations, want.MaxRunningMigrationsPerNode, want.SendMbpsLimit, want.MaxDowntimeMS = true, 1, 80, 500
	if last != want {
		t.Fatalf("settings %+v, want %+v", last, want)
	}
	status, body = e.do("GET", "/v1/settings", "", bearer(opToken)...)
	if status != 200 || json.Unmarshal(body, &s) != nil || s != want {
		t.Fatalf("GET settings = %d %s, want %+v", status, body, want)
	}
}

func TestUserMigrationOverride(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.logEvent(events.TypeInstanceDeclared, "", "i3", events.InstanceDeclared{Name: "i3", Owner: "acct-1",
		Size: events.Size{MemoryMiB: 2048, VCPUs: 1, DisksMiB: []int64{4096, 1024}}, Storage: events.StoragePlain,
		RunState: events.RunRunning, PrimaryNode: "node-b1", NICs: []events.NIC{{MAC: "aa:bb", Network: "n1"}}})
	for _, tc := range []struct {
		body   string
		status int
	}{{`{}`, 400}, {`{"allowed": "yes"}`, 400}, {`{"allowed": true, "x": 1}`, 400}, {`{"allowed": true}`, 202}, {`{"allowed": null}`, 202}} {
		if status, body := e.do("PUT", "/v1/instances/i3/user-migration", tc.body); status != tc.status {
			t.Errorf("PUT %s = %d %s, want %d", tc.body, status, body, tc.status)
		}
	}
	recs := e.topic(events.TopicInventory)
	if len(recs) != 2 {
		t.Fatalf("%d inventory events, want 2", len(recs))
	}
	d := as[events.InstanceDeclared](t, recs[0].Event)
	if d.UserMigration == nil || !*d.UserMigration || len(d.Size.DisksMiB) != 2 || len(d.NICs) != 1 || d.PrimaryNode != "node-b1" {
		t.Fatalf("restated %+v", d)
	}
	if d := as[events.InstanceDeclared](t, recs[1].Event); d.UserMigration != nil {
		t.Fatalf("restated %+v, want no override", d)
	}
}

// TestMigrationWatch replays a finished migration's history: percent
// never goes backwards, and the stream ends after the switch's end event.
// A switched migration's record says how long the instance was down,
// Drove's figure and the workload's own; a record before any switch says
// neither (the fields are optional).
func TestMigrationRecordDowntime(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.instanceRow("d1", "acct-1", nil)
	e.instanceRow("d2", "acct-1", nil)
	e.record(events.MigrationStateChanged{Migration: "m-d1", Instance: "d1", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationSuccessful, Phase: events.PhaseSwitch, Switched: true,
		DowntimeMS: 140, WorkloadDowntimeMS: 161, PredictedDowntimeMS: 120, MaxDowntimeMS: 300})
	e.record(events.MigrationStateChanged{Migration: "m-d2", Instance: "d2", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationRunning, Phase: events.PhaseSync})
	var rec map[string]any
	e.get("/v1/migrations/m-d1", &rec)
	if rec["downtime_ms"] != 140.0 || rec["workload_downtime_ms"] != 161.0 {
		t.Errorf("the switched record says downtime %v ms, the workload's %v ms; want 140 and 161", rec["downtime_ms"], rec["workload_downtime_ms"])
	}
	if rec["predicted_downtime_ms"] != 120.0 || rec["max_downtime_ms"] != 300.0 {
		t.Errorf("the switched record predicted %v ms, budget %v ms; want 120 and 300", rec["predicted_downtime_ms"], rec["max_downtime_ms"])
	}
	rec = nil
	e.get("/v1/migrations/m-d2", &rec)
	if _, has := rec["downtime_ms"]; has {
		t.Errorf("a record before its switch has a downtime: %v", rec)
	}
	if _, has := rec["workload_downtime_ms"]; has {
		t.Errorf("a record before its switch has a workload downtime: %v", rec)
	}
}

func TestMigrationWatch(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.instanceRow("w1", "acct-1", nil)
	e.record(events.MigrationStateChanged{Migration: "m-w", Instance: "w1", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationRunning, Phase: events.PhaseSync})
	prog := func(idx int, phase string, cur, total int64) {
		e.logEvent(events.TypeProgress, "m-w", "w1", events.Progress{Request: "m-w", Index: idx, Instance: "w1", Node: "node-a1",
			Phase: phase, State: events.ProgressRunning, Current: cur, Total: total, BytesPerSecond: 100})
	}
	end := func(idx int, phase string) {
		e.logEvent(events.TypeEnd, "m-w", "w1", events.End{Request: "m-w", Index: idx, Instance: "w1", Node: "node-a1",
			Phase: phase, State: events.EndSuccessful})
	}
	prog(0, "begin", 1, 1)
	end(0, "begin")
	prog(1, "sync", 50, 100)
	prog(1, "sync", 60, 200) // the total grew: 30% would go backwards
	prog(1, "sync", 200, 200)
	end(1, "sync")
	prog(2, "switch", 10, 100)

	var rec struct {
		ID      string                `json:"id"`
		State   string                `json:"state"`
		History []wire.ProgressRecord `json:"progress_history"`
	}
	e.get("/v1/migrations/m-w", &rec)
	if rec.ID != "m-w" || rec.State != "running" || len(rec.History) != 7 {
		t.Fatalf("record %+v", rec)
	}
	lines := make(chan map[string]any, 100)
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(e.ctx, "GET", e.srv.URL+"/v1/instances/w1/migrate/watch", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["type"] != "keepalive" {
				lines <- m
			}
		}
		done <- sc.Err()
	}()
	var got []map[string]any
	next := func() map[string]any {
		select {
		case l := <-lines:
			got = append(got, l)
			return l
		case <-time.After(10 * time.Second):
			t.Fatalf("no line after %d lines", len(got))
		}
		return nil
	}
	for range 7 {
		next()
	}
	if p := got[3]["percent"].(float64); p != 50 || !strings.Contains(got[3]["message"].(string), "total grew") {
		t.Fatalf("line %v: percent went backwards or did not say why", got[3])
	}
	// Live: the switch ends, and with it the stream.
	end(2, "switch")
	if l := next(); l["type"] != "end" || l["phase"] != "switch" {
		t.Fatalf("last line %v", l)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after the switch's end event")
	}
}

// TestMigrationWatchSteps: with ?rows=steps each line of a migration's
// stream carries the step it changed, folded by gateway/progress, live
// and in the history; without it the lines are RFD 34's alone; another
// value is a 400.
func TestMigrationWatchSteps(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.instanceRow("w1", "acct-1", nil)
	e.record(events.MigrationStateChanged{Migration: "m-w", Instance: "w1", Account: "ops", Role: events.RoleOperator,
		Target: "node-a2", State: events.MigrationRunning, Phase: events.PhaseSync})
	prog := func(idx int, phase string, cur, total int64) {
		e.logEvent(events.TypeProgress, "m-w", "w1", events.Progress{Request: "m-w", Index: idx, Instance: "w1", Node: "node-a1",
			Phase: phase, State: events.ProgressRunning, Current: cur, Total: total, BytesPerSecond: 100, ETASeconds: 2})
	}
	end := func(idx int, phase string) {
		e.logEvent(events.TypeEnd, "m-w", "w1", events.End{Request: "m-w", Index: idx, Instance: "w1", Node: "node-a1",
			Phase: phase, State: events.EndSuccessful})
	}
	prog(0, "begin", 0, 1)
	end(0, "begin")
	prog(1, "sync", 50, 100)

	live := e.watch("/v1/instances/w1/migrate/watch?rows=steps")
	step := func() wire.MigrationStep {
		t.Helper()
		for {
			l := live.next()
			var m wire.MigrationLine
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			if m.Type == "keepalive" {
				continue
			}
			if len(m.Steps) != 1 || m.Steps[0].Index != m.Index {
				t.Fatalf("line %s: want the one step it changed", l)
			}
			return m.Steps[0]
		}
	}
	if s := step(); s.Label != "making a reservation" || s.State != "running" || s.Percent != 0 {
		t.Fatalf("the begin's first step %+v", s)
	}
	if s := step(); s.State != "successful" || s.Percent != 100 || s.Current != 1 || s.Ended == nil {
		t.Fatalf("the begin's end %+v", s)
	}
	if s := step(); s.Label != "synchronizing filesystems" || s.Percent != 50 || s.Current != 50 || s.Total != 100 ||
		s.Rate != 100 || s.ETA != 2000 || s.Ended != nil {
		t.Fatalf("the sync's step %+v", s)
	}
	prog(1, "sync", 100, 100) // live: all sent, not yet ended
	if s := step(); s.Percent != 99.9 || s.State != "running" {
		t.Fatalf("the sync with all sent %+v", s)
	}
	end(1, "sync")
	if s := step(); s.State != "successful" || s.Percent != 100 || s.ETA != 0 || s.Ended == nil {
		t.Fatalf("the sync's end %+v", s)
	}
	prog(2, "switch", 0, 1)
	end(2, "switch")
	step()
	if s := step(); s.Label != "switching instance" || s.State != "successful" {
		t.Fatalf("the switch's end %+v", s)
	}

	// The whole stream again, checked against the OpenAPI document.
	status, body := e.do(http.MethodGet, "/v1/instances/w1/migrate/watch?rows=steps", "")
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if status != http.StatusOK || len(lines) != 7 {
		t.Fatalf("the history with steps: %d %s", status, body)
	}
	var last wire.MigrationLine
	if err := json.Unmarshal([]byte(lines[6]), &last); err != nil || len(last.Steps) != 1 || last.Steps[0].Phase != "switch" || last.Steps[0].Percent != 100 {
		t.Fatalf("the last line %s (%v)", lines[6], err)
	}
	_, body = e.do(http.MethodGet, "/v1/instances/w1/migrate/watch", "")
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var w map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &w); err != nil || w["steps"] != nil {
			t.Fatalf("a line without ?rows=steps: %s (%v)", l, err)
		}
	}
	if status, body := e.do(http.MethodGet, "/v1/instances/w1/migrate/watch?rows=jobs", ""); status != http.StatusBadRequest || !strings.Contains(string(body), "rows") {
		t.Fatalf("rows=jobs: %d %s", status, body)
	}
}
