package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// Per-instance migrations (RFD 34): POST /v1/instances/{name}/migrate
// checks the action against the views and the caller's rights, then
// appends one MigrationActionRequested, which the migration coordinator
// acts on. The record is the coordinator's MigrationStateChanged; the
// gateway reads it from event_log (sql/imig_records.sql).

// migrateActions are the values of ?action=, in the order help lists them.
var migrateActions = []string{"begin", "sync", "switch", "automatic", "abort", "pause",
	"rollback", "finalize", "schedule", "estimate"}

// active says the migration still holds its instance: it runs, waits, or
// switched and keeps the source copy until finalize (rollback needs it).
func migrationActive(m wire.InstanceMigration) bool {
	switch events.MigrationState(m.State) {
	case "": // asked for; the coordinator has not recorded it yet
		return true
	case events.MigrationQueued, events.MigrationScheduled, events.MigrationRunning, events.MigrationPaused:
		return true
	case events.MigrationSuccessful:
		return m.Switched && !m.Finalized
	}
	return false
}

// imigFilter selects per-instance migrations.
type imigFilter struct{ id, instance, state, owner, node string }

func (s *store) instanceMigrations(ctx context.Context, f imigFilter, after string, limit int) ([]wire.InstanceMigration, error) {
	ms, err := many[wire.InstanceMigration](ctx, s, "imig_records", f.id, f.instance, f.state, f.owner, f.node, after, limit)
	for i := range ms {
		ms[i].Kind = "instance"
	}
	return ms, err
}

// currentMigration is the instance's latest migration, or nil.
func (s *store) currentMigration(ctx context.Context, name string) (*wire.InstanceMigration, error) {
	ms, err := s.instanceMigrations(ctx, imigFilter{instance: name}, "", maxLimit*100)
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	latest := &ms[0]
	for i := range ms {
		m := &ms[i]
		// The active one wins; among ended ones, the newest.
		if migrationActive(*m) && !migrationActive(*latest) || migrationActive(*m) == migrationActive(*latest) && later(m.CreatedAt, latest.CreatedAt) {
			latest = m
		}
	}
	return latest, nil
}

// pendingMigrations remembers migrations this gateway asked for that the
// views do not show yet, by instance, so a double click of begin is
// refused here (the coordinator re-checks anyway).
type pendingMigrations struct {
	mu sync.Mutex
	m  map[string]pendingMigration
}

type pendingMigration struct {
	id string
	at time.Time
}

func (p *pendingMigrations) get(instance string) (pendingMigration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[instance]
	if ok && time.Since(e.at) > recentTTL {
		delete(p.m, instance)
		return e, false
	}
	return e, ok
}

func (p *pendingMigrations) set(instance, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]pendingMigration{}
	}
	p.m[instance] = pendingMigration{id: id, at: time.Now()}
}

func (p *pendingMigrations) forget(instance string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, instance)
}

func migrationLinks(instance, id string) wire.Links {
	base := "/v1/instances/" + instance
	return wire.Links{"self": "/v1/migrations/" + id, "watch": base + "/migrate/watch", "migrate": base + "/migrate"}
}

func (g *Gateway) postMigrate(c *gin.Context) error {
	name := c.Param("name")
	who := callerOf(c)
	action, b, at, err := parseMigrate(c)
	if err != nil {
		return err
	}
	// One command per gateway at a time: the check and the append are one
	// step, as for the bulk requests.
	g.commandMu.Lock()
	defer g.commandMu.Unlock()
	in, err := g.instanceFor(c, who, name)
	if err != nil {
		return err
	}
	settings, err := g.settings(c)
	if err != nil {
		return err
	}
	cur, err := g.db.currentMigration(c, name)
	if err != nil {
		return err
	}
	if err := g.mayMigrate(c, who, in, settings, activeOrNil(cur), action); err != nil {
		return err
	}
	if action == "estimate" {
		est, err := g.estimate(c, in, settings)
		if err != nil {
			return err
		}
		est.MaxDowntimeMS = budgetOf(b, in, settings).ms
		g.answer(c, http.StatusOK, est.Estimate)
		return nil
	}
	if err := g.checkPending(name, cur); err != nil {
		return err
	}
	id, err := g.checkAction(c, in, cur, action, b.Target, at)
	if err != nil {
		return err
	}
	fresh := cur == nil || cur.ID != id
	if b.MaxDowntimeMS != nil && !fresh {
		return badRequest("max_downtime_ms", fmt.Sprintf("max_downtime_ms: a budget is asked with the migration (begin, automatic, schedule); migration %s has begun", id))
	}
	var basis *events.DowntimeBasis
	if fresh {
		if basis, err = g.predictFor(c, in, settings, b); err != nil {
			return err
		}
	}
	why := b.Reason
	if strings.TrimSpace(why) == "" {
		why = fmt.Sprintf("%s migration of %s asked by %s (%s)", action, name, who.Name, who.Role)
	}
	p := events.MigrationActionRequested{Migration: id, Instance: name, Action: events.MigrationAction(action),
		Target: b.Target, Affinity: b.Affinity, ScheduledAt: at, Account: who.Name, Role: who.Role,
		MaxDowntimeMS: asked(b), Downtime: basis}
	if err := g.append(c, id, who.Name, why, p); err != nil {
		return err
	}
	if cur == nil || cur.ID != id {
		g.pending.set(name, id)
	}
	g.log.Info("migration action accepted", "migration", id, "instance", name, "action", action, "account", who.Name, "role", who.Role)
	if action != "schedule" {
		g.answer(c, http.StatusAccepted, wire.MigrateAnswer{Migration: id, Instance: name, Action: action, Status: "accepted",
			Links: migrationLinks(name, id)})
		return nil
	}
	return g.answerSchedule(c, id, in, who, b.Target, at)
}

// parseMigrate reads a migrate command: the action, the body, and the
// query parameters that override the body's fields.
func parseMigrate(c *gin.Context) (action string, b wire.MigrateBody, at *time.Time, err error) {
	action = c.Query("action")
	if !slices.Contains(migrateActions, action) {
		msg := "action: missing (want one of " + strings.Join(migrateActions, ", ") + ")"
		if action != "" {
			msg = fmt.Sprintf("action: unknown value %q (want one of %s)", action, strings.Join(migrateActions, ", "))
		}
		return "", b, nil, badRequest("action", msg)
	}
	if err := decodeBody(c, &b, true); err != nil {
		return "", b, nil, err
	}
	if v := c.Query("target"); v != "" {
		b.Target = v
	}
	if v := c.QueryArray("affinity"); len(v) > 0 {
		b.Affinity = v
	}
	if v := c.Query("scheduled_at"); v != "" {
		b.ScheduledAt = v
	}
	if v := c.Query("max_downtime_ms"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", b, nil, badRequest("max_downtime_ms", "max_downtime_ms: "+strconv.Quote(v)+" is not a whole number of milliseconds")
		}
		b.MaxDowntimeMS = &n
	}
	if v := b.MaxDowntimeMS; v != nil {
		if err := checkBudget(*v, "0 or absent follows the instance's or the settings' budget"); err != nil {
			return "", b, nil, err
		}
	}
	if b.ScheduledAt != "" {
		t, err := time.Parse(time.RFC3339, b.ScheduledAt)
		if err != nil {
			return "", b, nil, badRequest("scheduled_at", "scheduled_at: "+strconv.Quote(b.ScheduledAt)+" is not an RFC 3339 time (such as 2030-01-02T15:04:05Z)")
		}
		t = t.UTC()
		at = &t
	}
	return action, b, at, nil
}

// answerSchedule answers a schedule with the record, as RFD 34 says, once
// the coordinator wrote it (or as asked, if it is slow).
func (g *Gateway) answerSchedule(c *gin.Context, id string, in wire.Instance, who caller, target string, at *time.Time) error {
	m, err := g.awaitMigration(c, id, func(m wire.InstanceMigration) bool {
		return m.ScheduledAt != nil && m.ScheduledAt.Equal(*at) || m.State == string(events.MigrationFailed)
	})
	if err != nil {
		return err
	}
	if m == nil {
		now := time.Now().UTC()
		m = &wire.InstanceMigration{Kind: "instance", Role: string(who.Role), Owner: in.Owner, Target: target,
			MigrationRecord: wire.MigrationRecord{ID: id, Instance: in.Name, Account: who.Name, Source: in.Primary,
				State: string(events.MigrationScheduled), Phase: events.PhaseBegin},
			ScheduledAt: at, UpdatedAt: &now,
			MigrationProgress: wire.MigrationProgress{CreatedAt: &now, Message: "accepted; the coordinator has not recorded it yet"}}
	}
	g.answer(c, http.StatusOK, m)
	return nil
}

func activeOrNil(m *wire.InstanceMigration) *wire.InstanceMigration {
	if m != nil && migrationActive(*m) {
		return m
	}
	return nil
}

// instanceFor reads an instance the caller may see: 404 when unknown, 403
// (audited) when it is another account's.
func (g *Gateway) instanceFor(c *gin.Context, who caller, name string) (wire.Instance, error) {
	in, err := one[wire.Instance](c, g.db, "instances_list", "", "", "", "", name, 1)
	if errors.Is(err, ErrNotFound) {
		return in, notFound("name", "unknown instance "+strconv.Quote(name))
	}
	if err != nil {
		return in, err
	}
	if !who.operator() && in.Owner != who.Name {
		return in, g.deny(c, who, http.StatusForbidden, fmt.Sprintf("instance %q is not yours (account %s)", name, who.Name))
	}
	return in, nil
}

// checkPending refuses actions on an instance whose new migration this
// gateway appended but the views do not show yet.
func (g *Gateway) checkPending(name string, cur *wire.InstanceMigration) error {
	p, ok := g.pending.get(name)
	if !ok {
		return nil
	}
	if cur != nil && cur.ID == p.id {
		g.pending.forget(name)
		return nil
	}
	e := conflict(codeMigrating, "name", fmt.Sprintf(
		"instance %q has migration %s, just accepted and not recorded yet; try again in a moment", name, p.id))
	e.Instance, e.Migration = name, p.id
	return e
}

// codeMigrating is the conflict of an instance held by its migration.
const codeMigrating = "migrating"

// checkAction applies RFD 34's order rules to action on in, whose latest
// migration is cur (nil for none), and returns the migration id the
// action is for: a new one for begin, automatic and schedule.
func (g *Gateway) checkAction(ctx context.Context, in wire.Instance, cur *wire.InstanceMigration, action, target string, at *time.Time) (string, error) {
	k := actionCheck{in: in, cur: cur}
	active := cur != nil && migrationActive(*cur)
	switch {
	case action == "schedule" && active:
		// A scheduled migration's time can be changed until it switches.
		if cur.Switched {
			return "", k.refuse("migration %s has already switched; there is nothing left to schedule", cur.ID)
		}
		if err := checkScheduledAt(at); err != nil {
			return "", err
		}
		return cur.ID, nil
	case action == "begin" || action == "automatic" || action == "schedule":
		if active {
			return "", k.busy("it gets no second migration until this one ends (abort it, or finalize or roll back a switched one)")
		}
		if err := g.checkNew(ctx, k, target); err != nil {
			return "", err
		}
		if action == "schedule" {
			if err := checkScheduledAt(at); err != nil {
				return "", err
			}
		}
		return events.NewID(), nil
	case !active:
		if cur != nil && cur.Switched && action == "rollback" && cur.Finalized {
			return "", k.refuse("migration %s of %q was finalized: the source copy is gone, there is nothing to roll back to", cur.ID, in.Name)
		}
		return "", k.refuse("instance %q has no migration in progress; %s needs one begun with action=begin (or automatic or schedule)", in.Name, action)
	}
	if err := k.checkStep(action); err != nil {
		return "", err
	}
	return cur.ID, nil
}

// actionCheck is the instance and latest migration an action is checked
// against, and the conflicts it answers with.
type actionCheck struct {
	in  wire.Instance
	cur *wire.InstanceMigration
}

func (k actionCheck) busy(verb string) error {
	e := conflict(codeMigrating, "name", fmt.Sprintf("instance %q is migrating (migration %s, %s in phase %s); %s",
		k.in.Name, k.cur.ID, k.cur.State, k.cur.Phase, verb))
	e.Instance, e.Migration = k.in.Name, k.cur.ID
	return e
}

func (k actionCheck) refuse(format string, args ...any) error {
	e := conflict(codeConflict, "action", fmt.Sprintf(format, args...))
	e.Instance = k.in.Name
	if k.cur != nil {
		e.Migration = k.cur.ID
	}
	return e
}

func checkScheduledAt(at *time.Time) error {
	switch {
	case at == nil:
		return badRequest("scheduled_at", "scheduled_at: missing (an RFC 3339 time: when the switch runs)")
	case !at.After(time.Now()):
		return badRequest("scheduled_at", "scheduled_at: "+at.Format(time.RFC3339)+" is not in the future")
	}
	return nil
}

// checkNew checks a new migration of k.in: no bulk request holds it, its
// storage can migrate, and the target asked for is another known node.
func (g *Gateway) checkNew(ctx context.Context, k actionCheck, target string) error {
	in := k.in
	if err := g.checkNoRequest(ctx, in.Name); err != nil {
		return err
	}
	if why := events.StorageKind(in.Storage).MigrationRefusal(); why != "" {
		return k.refuse("instance %q has %s storage, which %s", in.Name, in.Storage, why)
	}
	if target == "" {
		return nil
	}
	if target == in.Primary {
		return badRequest("target", fmt.Sprintf("target: %q is where %s runs now", target, in.Name))
	}
	known, err := g.db.column(ctx, "nodes_known", []string{target})
	if err != nil {
		return err
	}
	if len(known) == 0 {
		return notFound("target", "unknown node "+strconv.Quote(target))
	}
	return nil
}

// checkStep checks an action on the active migration k.cur against its
// state: sync and switch between phases, pause during a sync, abort before
// the switch, rollback and finalize after it.
func (k actionCheck) checkStep(action string) error {
	cur := k.cur
	state := events.MigrationState(cur.State)
	switch action {
	case "sync", "switch":
		if cur.Switched {
			return k.refuse("migration %s has already switched; finalize it or roll it back", cur.ID)
		}
		switch state {
		case events.MigrationRunning:
			return k.refuse("migration %s is running (phase %s); %s once its phase ended (or pause a sync first)", cur.ID, cur.Phase, action)
		case events.MigrationQueued:
			return k.refuse("migration %s is queued, waiting for a free slot on %s; %s once it has begun", cur.ID, cur.Source, action)
		case events.MigrationScheduled:
			return k.refuse("migration %s is scheduled to switch at %s; reschedule it (action=schedule) or abort it", cur.ID, fmtTime(cur.ScheduledAt))
		}
		if action == "switch" && cur.Syncs < 1 {
			return k.refuse("switch needs at least one completed sync; migration %s has none: run action=sync first", cur.ID)
		}
	case "pause":
		if state != events.MigrationRunning || cur.Phase != events.PhaseSync {
			return k.refuse("pause is only possible during a sync; migration %s is %s in phase %s", cur.ID, state, cur.Phase)
		}
	case "abort":
		if cur.Switched {
			return k.refuse("the switch of migration %s has committed; abort is no longer possible: use action=rollback", cur.ID)
		}
	case "rollback", "finalize":
		if !cur.Switched {
			return k.refuse("migration %s has not switched yet; %s applies after a successful switch (abort it instead)", cur.ID, action)
		}
		if state != events.MigrationSuccessful {
			return k.refuse("migration %s is %s; %s once its switch has ended", cur.ID, state, action)
		}
	}
	return k.checkPhaseEnded(action)
}

// checkPhaseEnded refuses a step that starts the next phase while the
// record says the latest one still runs. checkStep's state checks come
// first, for their clearer answers; a paused record is the case they
// miss: it says paused as soon as a pause is asked for, while the pause
// phase still stops the sync's send, and the coordinator would refuse the
// step later, in the record's message.
func (k actionCheck) checkPhaseEnded(action string) error {
	cur := k.cur
	if !cur.PhaseRunning {
		return nil
	}
	switch action {
	case "sync", "switch", "rollback", "finalize":
		return k.refuse("migration %s is %s, but its last phase is still under way (%s); %s once it has ended",
			cur.ID, cur.State, cur.Message, action)
	}
	return nil
}

// checkNoRequest refuses a migration of an instance an active bulk
// request holds.
func (g *Gateway) checkNoRequest(ctx context.Context, name string) error {
	claims, err := many[claim](ctx, g.db, "active_claims", []string{name})
	if err != nil || len(claims) == 0 {
		return err
	}
	e := conflict(codeActive, "name", fmt.Sprintf("instance %q is part of active request %s", name, claims[0].Request))
	e.Instance, e.Request = name, claims[0].Request
	return e
}

// awaitMigration polls the views for migration id's record until ready
// says it shows the change, or DryRunWait passed (then whatever record
// there is, or nil).
func (g *Gateway) awaitMigration(ctx context.Context, id string, ready func(wire.InstanceMigration) bool) (*wire.InstanceMigration, error) {
	deadline := time.Now().Add(g.cfg.DryRunWait)
	wait := 20 * time.Millisecond
	for {
		ms, err := g.db.instanceMigrations(ctx, imigFilter{id: id}, "", 1)
		if err != nil {
			return nil, err
		}
		if len(ms) > 0 && ready(ms[0]) {
			return &ms[0], nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			if len(ms) > 0 {
				return &ms[0], nil
			}
			return nil, nil
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// checkNotMigrating refuses a bulk request that would move an instance
// held by its own migration: a migrating instance accepts no other
// operation.
func (g *Gateway) checkNotMigrating(ctx context.Context, field string, instances []string) error {
	ms, err := g.db.instanceMigrations(ctx, imigFilter{}, "", maxLimit*100)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if migrationActive(m) && slices.Contains(instances, m.Instance) {
			e := conflict(codeMigrating, field, fmt.Sprintf("instance %q is migrating (migration %s, %s); it accepts no other operation until the migration ends",
				m.Instance, m.ID, m.State))
			e.Instance, e.Migration = m.Instance, m.ID
			return e
		}
	}
	return nil
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "(no time)"
	}
	return t.UTC().Format(time.RFC3339)
}

func later(a, b *time.Time) bool { return a != nil && (b == nil || a.After(*b)) }
