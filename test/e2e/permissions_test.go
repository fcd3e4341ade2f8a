package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner"
)

// The permission matrix of per-instance migrations (issue 5), through the
// HTTP API against the whole system with authentication on: every action
// for every kind of caller, with the status it gets, and every refusal
// audited on drove.audit.

const (
	tokOperator = "tok-ops"
	tokOwnerA   = "tok-acct-a"
	tokOwnerB   = "tok-acct-b"
	acctA       = "acct-a"
	acctB       = "acct-b"
)

var permTokens = map[string]gateway.Account{
	tokOperator: {Name: "ops", Role: events.RoleOperator},
	tokOwnerA:   {Name: acctA, Role: events.RoleOwner},
	tokOwnerB:   {Name: acctB, Role: events.RoleOwner},
}

// ownedDemo is the demo cluster with owners: Ganeti's inventory has none
// (every demo instance belongs to "unknown"), so the instances are dealt
// out in turn to acct-a and acct-b.
func ownedDemo() *planner.Cluster {
	c := allinone.DemoCluster()
	for i := range c.Instances {
		c.Instances[i].Owner = []string{acctA, acctB}[i%2]
	}
	return c
}

// startWithTokens is start with the API's bearer tokens on and the owned
// demo cluster; e.api speaks as the operator.
func startWithTokens(t *testing.T, tokens map[string]gateway.Account, operatorToken string) *env {
	t.Helper()
	return startWith(t, func(c *allinone.Config) {
		c.Seed, c.GatewayTokens = ownedDemo, tokens
		// The matrix counts one audit record per refusal; the budget
		// that folds floods is the gateway's own test.
		c.RefusalAuditBurst = 1000
	}, operatorToken)
}

// as is a client of the same gateway presenting token ("" for none).
func (e *env) as(token string) *client.Client {
	c := client.New(e.api.Base, "e2e")
	c.Token = token
	return c
}

// ownedInstance is an instance as the API shows it, with its owner.
type ownedInstance struct {
	Name          string `json:"name"`
	Owner         string `json:"owner"`
	Storage       string `json:"storage"`
	Primary       string `json:"primary"`
	RunState      string `json:"run_state"`
	UserMigration *bool  `json:"user_migration"`
}

// movableOf returns n running instances of owner that a per-instance
// migration can move, picked by owner through the API.
func (e *env) movableOf(owner string, n int) []ownedInstance {
	e.t.Helper()
	var list struct {
		Items []ownedInstance `json:"items"`
	}
	if err := e.api.Get(context.Background(), "/v1/instances?limit=1000&owner="+url.QueryEscape(owner), &list); err != nil {
		e.t.Fatal(err)
	}
	var out []ownedInstance
	for _, in := range list.Items {
		if in.Owner != owner {
			e.t.Fatalf("?owner=%s listed %s of %s", owner, in.Name, in.Owner)
		}
		switch in.Storage {
		case "zfs-local", "rbd", "sharedfile", "ext", "gluster", "blockdev":
			if in.RunState == "running" && len(out) < n {
				out = append(out, in)
			}
		}
	}
	if len(out) < n {
		e.t.Fatalf("%s has %d running movable instances, want %d", owner, len(out), n)
	}
	return out
}

// denial is a refusal the test expects on drove.audit.
type denial struct{ action, subject string }

// matrix drives the actions and remembers every refusal.
type matrix struct {
	e       *env
	denials []denial
}

// refusal is a caller the matrix expects to be refused, with the status
// and a part of the message.
type refusal struct {
	who    perm
	status int
	want   string
}

// perm is a caller in the matrix: who presents which token.
type perm struct {
	name    string
	account string
	api     *client.Client
	subject string // as AuditRecorded names it
}

// call runs one action as who: its status, its answer, and the API's
// error (nil when accepted).
func (m *matrix) call(who perm, instance, action string) (int, json.RawMessage, *wire.Error) {
	m.e.t.Helper()
	var o wire.MigrateBody
	if action == "schedule" {
		o.ScheduledAt = time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	path := "/v1/instances/" + url.PathEscape(instance) + "/migrate?action=" + action
	var raw json.RawMessage
	status, err := who.api.Do(context.Background(), http.MethodPost, path, o, &raw)
	var ae *wire.Error
	if err != nil && !errors.As(err, &ae) {
		m.e.t.Fatalf("%s: %s of %s: %v", who.name, action, instance, err)
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		m.denials = append(m.denials, denial{action: "POST " + path, subject: who.subject})
	}
	return status, raw, ae
}

// try runs one action as who and returns its status and error message.
func (m *matrix) try(who perm, instance, action string) (int, string) {
	m.e.t.Helper()
	status, _, ae := m.call(who, instance, action)
	if ae != nil {
		return status, ae.Message
	}
	return status, ""
}

// expect runs one action as who and checks its status and, when want is
// given, that the message holds it.
func (m *matrix) expect(who perm, instance, action string, status int, want string) {
	m.e.t.Helper()
	got, msg := m.try(who, instance, action)
	if got != status || !strings.Contains(msg, want) {
		m.e.t.Fatalf("%s: %s of %s = %d %q, want %d with %q", who.name, action, instance, got, msg, status, want)
	}
}

// refusedAll checks that every action on instance is refused to who.
func (m *matrix) refusedAll(who perm, instance string, status int, want string) {
	m.e.t.Helper()
	for _, action := range []string{"begin", "sync", "switch", "automatic", "abort", "pause",
		"rollback", "finalize", "schedule", "estimate"} {
		m.expect(who, instance, action, status, want)
	}
}

// lifecycle takes instance through every action as who, each where it
// applies, so each is accepted: estimate, begin, sync, switch, rollback,
// automatic, finalize, begin again, sync, pause, abort, schedule, abort.
// Before each action every caller of denied tries it at the same point
// and is refused with its status; the migrations it starts come from
// who. It returns the migrations' ids.
func (m *matrix) lifecycle(who perm, instance string, denied []refusal, tenantOfOps *perm) []string {
	e := m.e
	e.t.Helper()
	const within = time.Minute
	var ids []string
	step := func(action string, status int) string {
		e.t.Helper()
		for _, d := range denied {
			m.expect(d.who, instance, action, d.status, d.want)
		}
		if tenantOfOps != nil && slices.Contains([]string{"sync", "switch", "abort", "pause", "rollback", "finalize"}, action) {
			// The instance's own owner, allowed to migrate it, may not
			// act on an operator's migration.
			m.expect(*tenantOfOps, instance, action, http.StatusForbidden, "started by an operator")
		}
		got, raw, ae := m.call(who, instance, action)
		if got != status || ae != nil {
			e.t.Fatalf("%s: %s of %s = %d %v, want %d", who.name, action, instance, got, ae, status)
		}
		// 202 answers name the migration; schedule answers with the
		// record; estimate with neither.
		var ans struct {
			Migration string `json:"migration"`
			ID        string `json:"id"`
		}
		if err := json.Unmarshal(raw, &ans); err != nil {
			e.t.Fatalf("%s: %s of %s answered %s: %v", who.name, action, instance, raw, err)
		}
		id := ans.Migration + ans.ID
		if action != "estimate" && id == "" {
			e.t.Fatalf("%s: %s of %s answered %s, naming no migration", who.name, action, instance, raw)
		}
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		return id
	}
	syncing := func(r wire.InstanceMigration) bool { return r.State == "running" && r.Phase == "sync" }

	step("estimate", http.StatusOK)
	id := step("begin", http.StatusAccepted)
	e.awaitState(id, within, "paused")
	step("sync", http.StatusAccepted)
	e.awaitRecord(id, within, "paused after a sync", func(r wire.InstanceMigration) bool { return r.State == "paused" && r.Syncs == 1 })
	step("switch", http.StatusAccepted)
	e.awaitRecord(id, within, "switched", func(r wire.InstanceMigration) bool { return r.State == "successful" && r.Switched })
	step("rollback", http.StatusAccepted)
	e.awaitState(id, within, "aborted")

	id = step("automatic", http.StatusAccepted)
	e.awaitRecord(id, within, "switched", func(r wire.InstanceMigration) bool { return r.State == "successful" && r.Switched })
	step("finalize", http.StatusAccepted)
	e.awaitRecord(id, within, "finalized", func(r wire.InstanceMigration) bool { return r.Finalized })

	// Pause needs a sync still running: slow the sends while it does
	// (set before the begin, so the coordinator has it when the sync
	// starts).
	e.settings(map[string]any{"send_mbps_limit": 1})
	id = step("begin", http.StatusAccepted)
	e.awaitState(id, within, "paused")
	step("sync", http.StatusAccepted)
	e.awaitRecord(id, within, "syncing", syncing)
	step("pause", http.StatusAccepted)
	step("abort", http.StatusAccepted)
	e.awaitState(id, within, "aborted")
	e.settings(map[string]any{"send_mbps_limit": 0})

	id = step("schedule", http.StatusOK)
	e.awaitState(id, within, "scheduled")
	step("abort", http.StatusAccepted)
	e.awaitState(id, within, "aborted")
	return ids
}

// TestPermissionMatrix runs every migration action as the operator, an
// owner with user migrations allowed globally, an owner with them denied
// globally but allowed on the instance, an owner with them denied (globally
// or on the instance), the owner of other instances and a caller with no
// token, through the API of the whole system.
func TestPermissionMatrix(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	e := startWithTokens(t, permTokens, tokOperator)
	m := &matrix{e: e}
	op := perm{"operator", "ops", e.api, "ops (operator)"}
	ownerA := perm{"owner " + acctA, acctA, e.as(tokOwnerA), acctA + " (owner)"}
	ownerB := perm{"owner " + acctB + " (of other instances)", acctB, e.as(tokOwnerB), acctB + " (owner)"}
	anon := perm{"no token", "", e.as(""), "anonymous (unauthenticated)"}
	badToken := perm{"unknown token", "", e.as("tok-nope"), "anonymous (unauthenticated)"}
	strangers := []refusal{{ownerB, http.StatusForbidden, "is not yours"}, {anon, http.StatusUnauthorized, "no Authorization header"}}

	ins := e.movableOf(acctA, 4)
	opsInst, globalInst, overrideInst, deniedInst := ins[0].Name, ins[1].Name, ins[2].Name, ins[3].Name
	bInst := e.movableOf(acctB, 1)[0].Name
	for _, name := range []string{opsInst, globalInst, overrideInst, deniedInst} {
		if got := e.ownedInstance(name).Owner; got != acctA {
			t.Fatalf("GET /v1/instances/%s: owner %q, want %s", name, got, acctA)
		}
	}

	// The per-instance overrides, set by the operator through the API.
	setOverrides(t, e, map[string]bool{overrideInst: true, deniedInst: false})

	// User migrations allowed globally.
	e.settings(map[string]any{"allow_user_migrations": true})
	t.Log("operator")
	opsIDs := m.lifecycle(op, opsInst, strangers, &ownerA)
	t.Log("owner, user migrations allowed globally")
	aIDs := m.lifecycle(ownerA, globalInst, strangers, nil)
	t.Log("owner, allowed globally, denied on the instance")
	m.refusedAll(ownerA, deniedInst, http.StatusForbidden, "disallowed for this instance")
	// A migration of acct-b's, for the listings below: begun by its
	// owner, aborted by the operator.
	bID := beginAndAbort(t, m, ownerB, bInst, anon, ownerA, op)

	// User migrations denied globally: only the instance that allows them
	// may be migrated by its owner.
	e.settings(map[string]any{"allow_user_migrations": false})
	t.Log("owner, denied globally, allowed on the instance")
	aIDs = append(aIDs, m.lifecycle(ownerA, overrideInst, strangers, nil)...)
	t.Log("owner, denied globally")
	m.refusedAll(ownerA, globalInst, http.StatusForbidden, "disallowed by the operators' settings")
	m.refusedAll(ownerB, bInst, http.StatusForbidden, "disallowed by the operators' settings")
	m.refusedAll(badToken, globalInst, http.StatusUnauthorized, "unknown token")

	// Listings: a tenant sees only their own instances' migrations (the
	// operator's migration of acct-a's instance included); the operator
	// sees all.
	checkListings(t, m, op, ownerA, ownerB, anon, opsIDs, aIDs, bID)

	// Every refusal appended one AuditRecorded, and nothing else did.
	audited := checkRefusalsAudited(t, e, m.denials)
	t.Logf("%d refusals audited; %s in all", audited, time.Since(t0).Round(time.Millisecond))
}

// setOverrides sets each instance's user migration override through the
// API and waits for the views to show it.
func setOverrides(t *testing.T, e *env, overrides map[string]bool) {
	for name, allowed := range overrides {
		if err := e.api.SetUserMigration(context.Background(), name, &allowed); err != nil {
			t.Fatal(err)
		}
		e.waitFor("the override of "+name+" in the views", time.Minute, func() bool {
			um := e.ownedInstance(name).UserMigration
			return um != nil && *um == allowed
		})
	}
}

// beginAndAbort begins a migration of inst as its owner, checks that no
// caller without a token nor another owner may abort it and that the
// operator may, and returns its id.
func beginAndAbort(t *testing.T, m *matrix, owner perm, inst string, anon, other, op perm) string {
	e := m.e
	st, raw, ae := m.call(owner, inst, "begin")
	var began wire.MigrateAnswer
	if st != http.StatusAccepted || ae != nil || json.Unmarshal(raw, &began) != nil || began.Migration == "" {
		t.Fatalf("%s begin of its own %s = %d %s %v", owner.account, inst, st, raw, ae)
	}
	id := began.Migration
	e.awaitState(id, time.Minute, "paused")
	m.expect(anon, inst, "abort", http.StatusUnauthorized, "")
	m.expect(other, inst, "abort", http.StatusForbidden, "not yours")
	m.expect(op, inst, "abort", http.StatusAccepted, "")
	e.awaitState(id, time.Minute, "aborted")
	return id
}

// checkListings checks a tenant lists only their own instances' migrations
// (the operator's migration of acct-a's instance included), the operator
// lists all, and a tenant may not read another's.
func checkListings(t *testing.T, m *matrix, op, ownerA, ownerB, anon perm, opsIDs, aIDs []string, bID string) {
	listIDs := func(who perm) []string {
		t.Helper()
		ms, err := who.api.Migrations(context.Background(), client.MigrationFilter{})
		if err != nil {
			t.Fatalf("%s: GET /v1/migrations: %v", who.name, err)
		}
		var ids []string
		for _, mig := range ms {
			if who != op && mig.Owner != who.account {
				t.Errorf("%s lists migration %s of %s's instance %s", who.name, mig.ID, mig.Owner, mig.Instance)
			}
			ids = append(ids, mig.ID)
		}
		slices.Sort(ids)
		return ids
	}
	wantA := slices.Sorted(slices.Values(append(slices.Clone(opsIDs), aIDs...)))
	if got := listIDs(ownerA); !slices.Equal(got, wantA) {
		t.Errorf("acct-a lists %v, want %v", got, wantA)
	}
	if got := listIDs(ownerB); !slices.Equal(got, []string{bID}) {
		t.Errorf("acct-b lists %v, want [%s]", got, bID)
	}
	if got := listIDs(op); len(got) != len(wantA)+1 {
		t.Errorf("the operator lists %d migrations, want %d", len(got), len(wantA)+1)
	}
	for _, c := range []struct {
		who    perm
		path   string
		status int
	}{
		{ownerB, "/v1/migrations?owner=" + acctA, http.StatusForbidden},
		{ownerB, "/v1/migrations/" + aIDs[0], http.StatusForbidden},
		{anon, "/v1/migrations", http.StatusUnauthorized},
	} {
		status, _ := c.who.api.Do(context.Background(), http.MethodGet, c.path, nil, nil)
		if status != c.status {
			t.Errorf("%s: GET %s = %d, want %d", c.who.name, c.path, status, c.status)
		}
		m.denials = append(m.denials, denial{action: "GET " + c.path, subject: c.who.subject})
	}
}

// checkRefusalsAudited checks drove.audit holds one AuditRecorded for each
// expected refusal and nothing else; it returns how many.
func checkRefusalsAudited(t *testing.T, e *env, denials []denial) int {
	recs, err := kafka.ReadAll(context.Background(), e.kcfg, events.TopicAudit)
	if err != nil {
		t.Fatal(err)
	}
	var got []denial
	for _, r := range recs {
		a, err := events.As[events.AuditRecorded](r.Event)
		if err != nil {
			t.Fatalf("drove.audit holds %s: %v", r.Event.Type, err)
		}
		if a.Outcome != events.AuditDenied || a.Detail == "" {
			t.Errorf("audit record %+v", a)
		}
		got = append(got, denial{action: a.Action, subject: a.Subject})
	}
	cmp := func(a, b denial) int { return strings.Compare(a.action+"\x00"+a.subject, b.action+"\x00"+b.subject) }
	slices.SortFunc(got, cmp)
	want := slices.SortedFunc(slices.Values(denials), cmp)
	if !slices.Equal(got, want) {
		t.Errorf("drove.audit has %d refusals, want %d", len(got), len(want))
		for _, d := range want {
			if !slices.Contains(got, d) {
				t.Errorf("not audited: %s by %s", d.action, d.subject)
			}
		}
		for _, d := range got {
			if !slices.Contains(want, d) {
				t.Errorf("audited but not expected: %s by %s", d.action, d.subject)
			}
		}
	}
	return len(want)
}

// ownedInstance reads one instance with its owner and override.
func (e *env) ownedInstance(name string) ownedInstance {
	e.t.Helper()
	var in ownedInstance
	if err := e.api.Get(context.Background(), "/v1/instances/"+url.PathEscape(name), &in); err != nil {
		e.t.Fatal(err)
	}
	return in
}
