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
)

// Per-instance migrations (RFD 34): POST /v1/instances/{name}/migrate
// checks the action against the views and the caller's rights, then
// appends one MigrationActionRequested, which the migration coordinator
// acts on. The record is the coordinator's MigrationStateChanged; the
// gateway reads it from event_log (sql/imig_records.sql).

// migrateActions are the values of ?action=, in the order help lists them.
var migrateActions = []string{"begin", "sync", "switch", "automatic", "abort", "pause",
	"rollback", "finalize", "schedule", "estimate"}

// instanceMigration is RFD 34's migration record of a per-instance
// migration.
type instanceMigration struct {
	ID             string     `db:"id" json:"id"`
	Kind           string     `db:"-" json:"kind"`
	Instance       string     `db:"instance" json:"instance"`
	Account        string     `db:"account" json:"account"`
	Role           string     `db:"role" json:"role"`
	Owner          string     `db:"owner" json:"owner"`
	Source         string     `db:"source_node" json:"source_server"`
	Target         string     `db:"target_node" json:"target_server,omitempty"`
	Automatic      bool       `db:"automatic" json:"automatic"`
	State          string     `db:"state" json:"state"`
	Phase          string     `db:"phase" json:"phase"`
	Syncs          int        `db:"syncs" json:"num_sync_phases"`
	LastSyncBytes  int64      `db:"last_sync_bytes" json:"last_sync_size"`
	ScheduledAt    *time.Time `db:"scheduled_at" json:"scheduled_timestamp,omitempty"`
	PriorRunState  string     `db:"prior_run_state" json:"prior_run_state,omitempty"`
	Switched       bool       `db:"switched" json:"switched"`
	Finalized      bool       `db:"finalized" json:"finalized"`
	PhaseRunning   bool       `db:"phase_running" json:"phase_running"`
	Message        string     `db:"message" json:"message,omitempty"`
	Error          string     `db:"error" json:"error,omitempty"`
	ErrorDetail    string     `db:"error_detail" json:"error_detail,omitempty"`
	CreatedAt      *time.Time `db:"created_at" json:"created_timestamp"`
	StartedAt      *time.Time `db:"started_at" json:"started_timestamp,omitempty"`
	FinishedAt     *time.Time `db:"finished_at" json:"finished_timestamp,omitempty"`
	UpdatedAt      *time.Time `db:"updated_at" json:"updated_timestamp,omitempty"`
	CurrentBytes   int64      `db:"current_bytes" json:"current_progress"`
	TotalBytes     int64      `db:"total_bytes" json:"total_progress"`
	ETASeconds     float64    `db:"eta_seconds" json:"eta_seconds,omitempty"`
	BytesPerSecond int64      `db:"bytes_per_second" json:"transfer_bytes_second,omitempty"`
	// DowntimeMS and WorkloadDowntimeMS are the latest switch's downtime,
	// Drove's figure and the workload's own (issue 30); absent before one.
	DowntimeMS         int64            `db:"downtime_ms" json:"downtime_ms,omitempty"`
	WorkloadDowntimeMS int64            `db:"workload_downtime_ms" json:"workload_downtime_ms,omitempty"`
	History            []progressRecord `db:"-" json:"progress_history,omitempty"`
}

// active says the migration still holds its instance: it runs, waits, or
// switched and keeps the source copy until finalize (rollback needs it).
func (m instanceMigration) active() bool {
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

func (s *store) instanceMigrations(ctx context.Context, f imigFilter, after string, limit int) ([]instanceMigration, error) {
	ms, err := many[instanceMigration](ctx, s, "imig_records", f.id, f.instance, f.state, f.owner, f.node, after, limit)
	for i := range ms {
		ms[i].Kind = "instance"
	}
	return ms, err
}

// currentMigration is the instance's latest migration, or nil.
func (s *store) currentMigration(ctx context.Context, name string) (*instanceMigration, error) {
	ms, err := s.instanceMigrations(ctx, imigFilter{instance: name}, "", maxLimit*100)
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	latest := &ms[0]
	for i := range ms {
		m := &ms[i]
		// The active one wins; among ended ones, the newest.
		if m.active() && !latest.active() || m.active() == latest.active() && later(m.CreatedAt, latest.CreatedAt) {
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

// migrateBody is the optional body of POST .../migrate; the same fields
// may come as query parameters.
type migrateBody struct {
	Target      string   `json:"target"`
	Affinity    []string `json:"affinity"`
	ScheduledAt string   `json:"scheduled_at"`
	Reason      string   `json:"reason"`
}

// migrateAnswer is the answer to an accepted action.
type migrateAnswer struct {
	Migration string `json:"migration"`
	Instance  string `json:"instance"`
	Action    string `json:"action"`
	Status    string `json:"status"`
	Message   string `json:"message,omitempty"`
	Links     links  `json:"links"`
}

func migrationLinks(instance, id string) links {
	base := "/v1/instances/" + instance
	return links{"self": "/v1/migrations/" + id, "watch": base + "/migrate/watch", "migrate": base + "/migrate"}
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
		c.JSON(http.StatusOK, est)
		return nil
	}
	if err := g.checkPending(name, cur); err != nil {
		return err
	}
	id, err := g.checkAction(c, in, cur, action, b.Target, at)
	if err != nil {
		return err
	}
	why := b.Reason
	if strings.TrimSpace(why) == "" {
		why = fmt.Sprintf("%s migration of %s asked by %s (%s)", action, name, who.Name, who.Role)
	}
	p := events.MigrationActionRequested{Migration: id, Instance: name, Action: events.MigrationAction(action),
		Target: b.Target, Affinity: b.Affinity, ScheduledAt: at, Account: who.Name, Role: who.Role}
	if err := g.append(c, id, who.Name, why, p); err != nil {
		return err
	}
	if cur == nil || cur.ID != id {
		g.pending.set(name, id)
	}
	g.log.Info("migration action accepted", "migration", id, "instance", name, "action", action, "account", who.Name, "role", who.Role)
	if action != "schedule" {
		c.JSON(http.StatusAccepted, migrateAnswer{Migration: id, Instance: name, Action: action, Status: "accepted",
			Links: migrationLinks(name, id)})
		return nil
	}
	return g.answerSchedule(c, id, in, who, b.Target, at)
}

// parseMigrate reads a migrate command: the action, the body, and the
// query parameters that override the body's fields.
func parseMigrate(c *gin.Context) (action string, b migrateBody, at *time.Time, err error) {
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
func (g *Gateway) answerSchedule(c *gin.Context, id string, in instance, who caller, target string, at *time.Time) error {
	m, err := g.awaitMigration(c, id, func(m instanceMigration) bool {
		return m.ScheduledAt != nil && m.ScheduledAt.Equal(*at) || m.State == string(events.MigrationFailed)
	})
	if err != nil {
		return err
	}
	if m == nil {
		now := time.Now().UTC()
		m = &instanceMigration{ID: id, Kind: "instance", Instance: in.Name, Account: who.Name, Role: string(who.Role),
			Owner: in.Owner, Source: in.Primary, Target: target, State: string(events.MigrationScheduled),
			Phase: events.PhaseBegin, ScheduledAt: at, CreatedAt: &now, UpdatedAt: &now,
			Message: "accepted; the coordinator has not recorded it yet"}
	}
	c.JSON(http.StatusOK, m)
	return nil
}

func activeOrNil(m *instanceMigration) *instanceMigration {
	if m != nil && m.active() {
		return m
	}
	return nil
}

// instanceFor reads an instance the caller may see: 404 when unknown, 403
// (audited) when it is another account's.
func (g *Gateway) instanceFor(c *gin.Context, who caller, name string) (instance, error) {
	in, err := one[instance](c, g.db, "instances_list", "", "", "", "", name, 1)
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
func (g *Gateway) checkPending(name string, cur *instanceMigration) error {
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
func (g *Gateway) checkAction(ctx context.Context, in instance, cur *instanceMigration, action, target string, at *time.Time) (string, error) {
	k := actionCheck{in: in, cur: cur}
	active := cur != nil && cur.active()
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
	in  instance
	cur *instanceMigration
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
func (g *Gateway) awaitMigration(ctx context.Context, id string, ready func(instanceMigration) bool) (*instanceMigration, error) {
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
		if m.active() && slices.Contains(instances, m.Instance) {
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
